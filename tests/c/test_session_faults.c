/* Session files under file-system faults, through the C ABI:
 * - a full disk during a run: a child process (RLIMIT_FSIZE small, SIGXFSZ ignored) prompts an
 *   agent attached to a new session file until an append no longer fits; the run fails with an
 *   error naming the session file, and the file still opens, holds every message the child saw
 *   committed (message_end) and no partial line;
 * - a directory without write permission: creating a session there, or writing its first entry,
 *   fails with AGENT_ERR_IO naming the path; a session file without write permission likewise.
 *   Root may write anyway: as root the directory is /sys (which refuses new files even to root)
 *   and the file case is skipped, saying so. */
#include "check.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define FILE_LIMIT 12000 /* bytes: a few prompts' worth of lines */
#define USER_ENTRY "{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],\"timestamp\":1}}"

static int report_fd;
static atomic_int committed;

static void report(const char *line) {
    size_t len = strlen(line);
    if (write(report_fd, line, len) != (ssize_t)len) _exit(3);
}

static AgentListenerAnswer count_commits(void *ud, const AgentEvent *event) {
    (void)ud;
    if (event->kind == AGENT_EVENT_MESSAGE_END) {
        char line[32];
        snprintf(line, sizeof line, "committed %d\n", atomic_fetch_add(&committed, 1) + 1);
        report(line);
    }
    return AGENT_LISTENER_CONTINUE;
}

/* The child: prompts until a run fails, then reports "failed STATUS MESSAGE". Never returns. */
static void fill_the_disk(const char *dir) {
    signal(SIGXFSZ, SIG_IGN); /* a write past the limit fails with EFBIG instead of killing us */
    struct rlimit limit = {FILE_LIMIT, FILE_LIMIT};
    CHECK(setrlimit(RLIMIT_FSIZE, &limit) == 0);
    AgentSession session = {0};
    CHECK_OK(agent_session_create(dir, NTS, NULL, 0, &session));
    AgentOptions options = {0};
    CHECK_OK(agent_options_new("{\"initialState\":{\"model\":" MODEL_JSON "}}", NTS, &options));
    CHECK_OK(agent_options_set_scripted_model(options, "[]", NTS)); /* replaced before each prompt */
    /* Each answer is ~1000 bytes: the limit falls inside one of them, or inside a prompt's line. */
    char script[2048] = "[{\"content\":[{\"type\":\"text\",\"text\":\"";
    size_t len = strlen(script);
    for (int i = 0; i < 1000; i++) script[len++] = 'a' + i % 26;
    strcpy(script + len, "\"}]}]");
    CHECK_OK(agent_options_set_session(options, session));
    AgentHandle agent = {0};
    CHECK_OK(agent_new(options, &agent));
    uint64_t subscription = 0;
    CHECK_OK(agent_subscribe(agent, count_commits, NULL, NULL, &subscription));
    for (int i = 0; i < 100; i++) {
        CHECK_OK(agent_set_scripted_model(agent, script, NTS));
        AgentRun run = {0};
        AgentError *refused = agent_prompt_text(agent, "tell me more", NTS, NULL, 0, NULL, NULL, &run);
        if (refused) FAIL("agent_prompt_text failed with %d (\"%s\"): a full disk must fail the run, not the call",
                          agent_error_code(refused), agent_error_message(refused, NULL));
        WAIT_RUN(run);
        AgentRunOutcome outcome = outcome_of(run);
        if (outcome.status != AGENT_RUN_COMPLETED) {
            char line[4096];
            snprintf(line, sizeof line, "failed %d %.*s\n", outcome.status, (int)outcome.error_message.len,
                     outcome.error_message.ptr);
            report(line);
            CHECK_OK(agent_run_free(run));
            CHECK_OK(agent_free(agent));
            CHECK_OK(agent_session_free(session));
            exit(0);
        }
        CHECK_OK(agent_run_free(run));
    }
    FAIL("100 prompts of ~1 KB each fit under a file size limit of %d bytes", FILE_LIMIT);
}

/* The only *.jsonl file in `dir` (its path in `out`). */
static void session_file_in(const char *dir, char *out, size_t size) {
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    int found = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n > 6 && strcmp(e->d_name + n - 6, ".jsonl") == 0) {
            snprintf(out, size, "%s/%s", dir, e->d_name);
            found++;
        }
    }
    closedir(d);
    CHECK_EQ_INT(found, 1);
}

static char *read_all(const char *path, size_t *out_len) {
    FILE *f = fopen(path, "rb");
    if (!f) FAIL("cannot read %s", path);
    char *text = malloc(1 << 20);
    CHECK(text != NULL);
    size_t len = fread(text, 1, (1 << 20) - 1, f);
    fclose(f);
    text[len] = 0;
    *out_len = len;
    return text;
}

static void full_disk(const char *base) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/full", base);
    CHECK(mkdir(dir, 0700) == 0);
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) { /* before this process made any libagent call: no runtime threads to lose */
        close(fds[0]);
        report_fd = fds[1];
        fill_the_disk(dir);
    }
    close(fds[1]);
    char reported[16384];
    size_t used = 0;
    for (ssize_t n; (n = read(fds[0], reported + used, sizeof reported - 1 - used)) > 0;) used += (size_t)n;
    reported[used] = 0;
    close(fds[0]);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) FAIL("the child failed (status %d); it reported:\n%s", status, reported);

    /* The run failed, naming the session file. */
    char path[1024];
    session_file_in(dir, path, sizeof path);
    const char *failed = strstr(reported, "failed ");
    if (!failed) FAIL("the child reported no failed run:\n%s", reported);
    CHECK_HAS(failed, path);
    int commits = 0;
    for (const char *p = reported; (p = strstr(p, "committed ")); p++) commits++;
    CHECK(commits >= 2); /* the limit fell mid-run, after some messages were written */

    /* The file holds whole lines only, under the limit, and every committed message. */
    size_t len = 0;
    char *text = read_all(path, &len);
    CHECK(len > 0 && len <= FILE_LIMIT);
    if (text[len - 1] != '\n') FAIL("the file ends with a partial line: ...%s", text + (len > 200 ? len - 200 : 0));
    int lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    AgentSession session = {0};
    CHECK_OK(agent_session_open(path, NTS, NULL, 0, &session));
    char *entries = NULL;
    CHECK_OK(agent_session_get(session, AGENT_SESSION_ENTRIES, &entries, NULL));
    CHECK_EQ_INT(count_of(entries, "\"type\":\"message\""), commits);
    /* Every line parsed (none was skipped): one entry per line after the header. */
    CHECK_EQ_INT(count_of(entries, "\"parentId\":"), lines - 1);
    agent_string_free(entries);
    CHECK_OK(agent_session_free(session));
    free(text);
    printf("full disk: %d messages committed before the append that did not fit; %zu bytes, %d lines; the run: %.*s",
           commits, len, lines, (int)strcspn(failed, "\n") + 1, failed);
}

static void not_writable(const char *base) {
    /* Root ignores permission bits; sysfs refuses new files even to root. */
    char dir[512];
    int probe = -1;
    if (geteuid() != 0) {
        snprintf(dir, sizeof dir, "%s/read-only", base);
        CHECK(mkdir(dir, 0500) == 0);
    } else if ((probe = open("/sys/libagent-session-faults-probe", O_CREAT | O_WRONLY, 0600)) < 0) {
        snprintf(dir, sizeof dir, "/sys");
    } else {
        close(probe);
        unlink("/sys/libagent-session-faults-probe");
        printf("skipped: the directory and file without write permission (running as root, who may write "
               "anyway, and /sys takes new files here)\n");
        return;
    }
    AgentSession session = {0};
    AgentError *error = agent_session_create(dir, NTS, NULL, 0, &session);
    if (!error) error = agent_session_append(session, USER_ENTRY, NTS, NULL, NULL); /* written lazily */
    CHECK_ERR(error, AGENT_ERR_IO, dir);
    if (session.id) CHECK_OK(agent_session_free(session));
    if (geteuid() == 0) {
        printf("not writable: AGENT_ERR_IO for a directory that refuses new files (/sys); skipped: the file without "
               "write permission (running as root, who may write anyway)\n");
        return;
    }

    char path[600];
    snprintf(path, sizeof path, "%s/read-only.jsonl", base);
    int fd = open(path, O_CREAT | O_WRONLY, 0400);
    CHECK(fd >= 0);
    const char *header = "{\"type\":\"session\",\"version\":3,\"id\":\"s1\",\"timestamp\":\"2026-12-02T00:00:00.000Z\",\"cwd\":\"/\"}\n";
    CHECK(write(fd, header, strlen(header)) == (ssize_t)strlen(header));
    close(fd);
    session = (AgentSession){0};
    error = agent_session_open(path, NTS, NULL, 0, &session);
    if (!error) error = agent_session_append(session, USER_ENTRY, NTS, NULL, NULL);
    CHECK_ERR(error, AGENT_ERR_IO, path);
    if (session.id) CHECK_OK(agent_session_free(session));
    printf("not writable: AGENT_ERR_IO for the directory and the file\n");
}

int main(void) {
    char base[] = "/tmp/libagent-session-faults-XXXXXX";
    CHECK(mkdtemp(base) != NULL);
    full_disk(base);
    not_writable(base);
    char command[600];
    snprintf(command, sizeof command, "chmod -R u+w '%s' && rm -rf '%s'", base, base);
    CHECK(system(command) == 0);
    printf("ok\n");
    return 0;
}
