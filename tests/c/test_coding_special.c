/* The coding tool pack and files that are not plain files, through the C ABI (issue 25): a named
 * pipe in the root is refused at once, never blocking the run (the run must settle within 5 s,
 * else it is aborted and the pipe released, so this test cannot hang), and with
 * "refuseHardLinks" a file hard-linked in from outside the root is refused. */
#include "check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static char outer[64];
static char root[96];

static void path_of(char *out, size_t size, const char *dir, const char *rel) {
    snprintf(out, size, "%s/%s", dir, rel);
}

static void write_file(const char *dir, const char *rel, const char *text) {
    char path[256];
    path_of(path, sizeof path, dir, rel);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* Opening the pipe for writing (without blocking) and closing it ends a reader stuck on it. */
static void release_pipe_readers(void) {
    char path[256];
    path_of(path, sizeof path, root, "fifo");
    int fd = open(path, O_WRONLY | O_NONBLOCK);
    if (fd >= 0) close(fd);
}

static void option_checks(void) {
    AgentTool tools[8];
    size_t count = 0;
    CHECK_ERR(agent_coding_tools_new(root, NTS, "{\"refuseHardLinks\":\"yes\"}", NTS, NULL, NULL, NULL, tools, 8,
                                     &count),
              AGENT_ERR_INVALID_JSON, "\"refuseHardLinks\" must be true or false");
}

int main(void) {
    strcpy(outer, "/tmp/libagent-special-XXXXXX");
    CHECK(mkdtemp(outer) != NULL);
    path_of(root, sizeof root, outer, "root");
    CHECK(mkdir(root, 0700) == 0);
    write_file(root, "a.txt", "hello needle\n");
    write_file(outer, "secret.txt", "secret needle\n");
    char fifo[256], secret[256], linked[256], a_txt[256];
    path_of(fifo, sizeof fifo, root, "fifo");
    path_of(secret, sizeof secret, outer, "secret.txt");
    path_of(linked, sizeof linked, root, "linked.txt");
    path_of(a_txt, sizeof a_txt, root, "a.txt");
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK(link(secret, linked) == 0);
    option_checks();

    AgentTool tools[8];
    size_t count = 0;
    CHECK_OK(agent_coding_tools_new(root, NTS, "{\"tools\":[\"read\",\"grep\"],\"refuseHardLinks\":true}", NTS,
                                    NULL, NULL, NULL, tools, 8, &count));
    CHECK_EQ_INT(count, 2);
    AgentOptions options = sequential_options_with(tools, count);
    CHECK_OK(agent_options_set_scripted_model(options,
        "[{\"content\":[{\"type\":\"toolCall\",\"id\":\"call_1\",\"name\":\"read\","
        "\"arguments\":{\"path\":\"fifo\"}}],\"stopReason\":\"toolUse\"},"
        "{\"content\":[{\"type\":\"toolCall\",\"id\":\"call_2\",\"name\":\"grep\","
        "\"arguments\":{\"pattern\":\"needle\",\"path\":\"fifo\"}}],\"stopReason\":\"toolUse\"},"
        "{\"content\":[{\"type\":\"toolCall\",\"id\":\"call_3\",\"name\":\"grep\","
        "\"arguments\":{\"pattern\":\"needle\"}}],\"stopReason\":\"toolUse\"},"
        "{\"content\":[{\"type\":\"toolCall\",\"id\":\"call_4\",\"name\":\"read\","
        "\"arguments\":{\"path\":\"linked.txt\"}}],\"stopReason\":\"toolUse\"},"
        "{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}]", NTS));
    AgentHandle agent = {0};
    CHECK_OK(agent_new(options, &agent));
    AgentRun run;
    CHECK_OK(agent_prompt_text(agent, "go", NTS, NULL, 0, NULL, NULL, &run));
    /* 5 s (valgrind: 60 s) is far more than four tool calls take; a tool blocked on the pipe
     * would never answer. */
    AgentWaitResult waited = -1;
    CHECK_OK(agent_run_wait(run, getenv("LIBAGENT_TEST_SLOW") ? 60000 : 5000, &waited));
    if (waited != AGENT_WAIT_DONE) {
        CHECK_OK(agent_run_abort(run));
        release_pipe_readers();
        FAIL("the run did not settle within 5 s: a tool blocked on the named pipe");
    }
    CHECK_EQ_INT(outcome_of(run).status, AGENT_RUN_COMPLETED);
    CHECK_OK(agent_run_free(run));

    char *messages = NULL;
    CHECK_OK(agent_get_messages(agent, 0, 100, &messages, NULL));
    /* read and grep name the pipe and its kind; a search of the tree skips it. */
    CHECK_EQ_INT(count_of(messages, "fifo is a named pipe, not a regular file"), 2);
    CHECK_HAS(messages, "a.txt:1: hello needle");
    /* The hard link is refused (and skipped by the tree search): its content never shows. */
    CHECK_HAS(messages, "linked.txt has 2 hard links");
    CHECK_NOT_HAS(messages, "secret needle");
    agent_string_free(messages);
    CHECK_OK(agent_free(agent));

    unlink(fifo);
    unlink(linked);
    unlink(a_txt);
    unlink(secret);
    rmdir(root);
    rmdir(outer);
    printf("test_coding_special: ok\n");
    return 0;
}
