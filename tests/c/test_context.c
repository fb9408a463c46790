/* Context management's pieces through the C ABI: token estimates, the compaction threshold, a
 * session's estimate and compaction preparation, file lists, error classification and retry
 * delays, with every argument check (NULLs, bad and freed handles, invalid UTF-8, malformed and
 * wrongly shaped JSON, each naming what was wrong). */
#include "check.h"

#define KIT "{\"cwd\":\"/kit/cwd\"}"

/* A returned JSON text and its length agree. */
static void check_text(const char *out, size_t len) {
    CHECK(out != NULL && strlen(out) == len);
}

static void estimates(void) {
    char *out = NULL;
    size_t len = 0;
    /* "hello world" is 11 UTF-16 units: 3 tokens; "😀😀" is 4 units: 1 token. */
    const char *messages = "[{\"role\":\"user\",\"content\":\"hello world\"},"
                           "{\"role\":\"user\",\"content\":\"\xF0\x9F\x98\x80\xF0\x9F\x98\x80\"}]";
    CHECK_OK(agent_context_estimate(messages, NTS, &out, &len));
    check_text(out, len);
    CHECK_HAS(out, "\"perMessage\":[3,1]");
    CHECK_HAS(out, "\"tokens\":4");
    CHECK_HAS(out, "\"lastUsageIndex\":null");
    agent_string_free(out);

    CHECK_ERR(agent_context_estimate("[", NTS, &out, &len), AGENT_ERR_INVALID_JSON, "messages_json is not valid JSON");
    CHECK_ERR(agent_context_estimate("{}", NTS, &out, &len), AGENT_ERR_INVALID_JSON, "messages_json");
    CHECK_ERR(agent_context_estimate("[{\"content\":1}]", NTS, &out, &len), AGENT_ERR_INVALID_JSON, "role");
    CHECK_ERR(agent_context_estimate("\"\xff\"", NTS, &out, &len), AGENT_ERR_INVALID_UTF8, "messages_json");
    CHECK_ERR(agent_context_estimate(NULL, 1, &out, &len), AGENT_ERR_NULL, "messages_json");
    CHECK_ERR(agent_context_estimate("[]", NTS, NULL, &len), AGENT_ERR_NULL, "out_json is NULL");
}

static void threshold(void) {
    char *out = NULL;
    size_t len = 0;
    CHECK_OK(agent_context_should_compact("{\"contextTokens\":5001,\"contextWindow\":8000,"
                                          "\"settings\":{\"reserveTokens\":3000}}",
                                          NTS, &out, &len));
    check_text(out, len);
    CHECK_HAS(out, "\"shouldCompact\":true");
    CHECK_HAS(out, "\"contextTokens\":5001");
    agent_string_free(out);
    /* From a usage whose totalTokens is 0: the sum of its parts. */
    CHECK_OK(agent_context_should_compact("{\"usage\":{\"input\":10,\"output\":1,\"cacheRead\":2,"
                                          "\"cacheWrite\":3,\"totalTokens\":0},\"contextWindow\":200000}",
                                          NTS, &out, &len));
    check_text(out, len);
    CHECK_HAS(out, "\"contextTokens\":16");
    CHECK_HAS(out, "\"shouldCompact\":false");
    agent_string_free(out);

    CHECK_ERR(agent_context_should_compact("{\"contextTokens\":1}", NTS, &out, &len), AGENT_ERR_INVALID_JSON,
              "input_json needs \"contextWindow\"");
    CHECK_ERR(agent_context_should_compact("{\"contextWindow\":1}", NTS, &out, &len), AGENT_ERR_INVALID_JSON,
              "input_json needs \"contextTokens\"");
    CHECK_ERR(agent_context_should_compact("{\"contextTokens\":\"9\",\"contextWindow\":1}", NTS, &out, &len),
              AGENT_ERR_INVALID_JSON, "input_json's \"contextTokens\" must be a number");
    CHECK_ERR(agent_context_should_compact("{\"contextTokens\":1,\"contextWindow\":1,"
                                           "\"settings\":{\"reserveTokens\":-5}}",
                                           NTS, &out, &len),
              AGENT_ERR_INVALID_JSON, "\"reserveTokens\" must be a whole number");
    CHECK_ERR(agent_context_should_compact("[]", NTS, &out, &len), AGENT_ERR_INVALID_JSON,
              "input_json must be a JSON object");
}

static void file_lists(void) {
    char *out = NULL;
    size_t len = 0;
    const char *messages = "[{\"role\":\"assistant\",\"content\":["
                           "{\"type\":\"toolCall\",\"id\":\"1\",\"name\":\"read\",\"arguments\":{\"path\":\"b\"}},"
                           "{\"type\":\"toolCall\",\"id\":\"2\",\"name\":\"read\",\"arguments\":{\"path\":\"a\"}},"
                           "{\"type\":\"toolCall\",\"id\":\"3\",\"name\":\"edit\",\"arguments\":{\"path\":\"b\"}}]}]";
    CHECK_OK(agent_context_file_lists(messages, NTS, &out, &len));
    check_text(out, len);
    CHECK_HAS(out, "\"read\":[\"a\",\"b\"]");
    CHECK_HAS(out, "\"readFiles\":[\"a\"]");
    CHECK_HAS(out, "\"modifiedFiles\":[\"b\"]");
    agent_string_free(out);
    CHECK_ERR(agent_context_file_lists("7", NTS, &out, &len), AGENT_ERR_INVALID_JSON, "messages_json");
}

static void classification(void) {
    char *out = NULL;
    size_t len = 0;
    CHECK_OK(agent_context_classify_error("{\"stopReason\":\"error\",\"errorMessage\":\"529 overloaded_error\"}",
                                          NTS, NULL, 0, &out, &len));
    check_text(out, len);
    CHECK_HAS(out, "\"overflow\":false");
    CHECK_HAS(out, "\"retryable\":true");
    CHECK_HAS(out, "\"retryableInSession\":true");
    CHECK_NOT_HAS(out, "recoverableLength");
    agent_string_free(out);
    /* An overflow goes to compaction, never to a retry, even when its text looks transient. */
    CHECK_OK(agent_context_classify_error("{\"stopReason\":\"error\",\"errorMessage\":\"500 context_length_exceeded\"}",
                                          NTS, "{\"contextWindow\":0}", NTS, &out, &len));
    check_text(out, len);
    CHECK_HAS(out, "\"overflow\":true");
    CHECK_HAS(out, "\"retryable\":true");
    CHECK_HAS(out, "\"retryableInSession\":false");
    agent_string_free(out);
    /* A silent overflow needs the window; a short length stop is recoverable when asked. */
    const char *length_stop = "{\"stopReason\":\"length\",\"usage\":{\"input\":127000,\"output\":0,\"cacheRead\":0}}";
    CHECK_OK(agent_context_classify_error(length_stop, NTS, "{\"contextWindow\":128000,\"desiredMaxOutput\":4096}",
                                          NTS, &out, &len));
    check_text(out, len);
    CHECK_HAS(out, "\"overflow\":true");
    CHECK_HAS(out, "\"recoverableLength\":true");
    agent_string_free(out);
    CHECK_OK(agent_context_classify_error(length_stop, NTS, NULL, 0, &out, &len));
    check_text(out, len);
    CHECK_HAS(out, "\"overflow\":false");
    agent_string_free(out);

    CHECK_ERR(agent_context_classify_error("[]", NTS, NULL, 0, &out, &len), AGENT_ERR_INVALID_JSON,
              "message_json must be an assistant message");
    CHECK_ERR(agent_context_classify_error("{}", NTS, "[1]", NTS, &out, &len), AGENT_ERR_INVALID_JSON,
              "options_json must be a JSON object or null");
    CHECK_ERR(agent_context_classify_error("{}", NTS, "{\"contextWindow\":\"big\"}", NTS, &out, &len),
              AGENT_ERR_INVALID_JSON, "options_json's \"contextWindow\" must be a number");
    CHECK_ERR(agent_context_classify_error("{}", NTS, NULL, 0, NULL, &len), AGENT_ERR_NULL, "out_json is NULL");
}

static void retry_delays(void) {
    char *out = NULL;
    size_t len = 0;
    CHECK_OK(agent_context_retry_delays(NULL, 0, &out, &len));
    check_text(out, len);
    CHECK(strcmp(out, "{\"delays\":[2000,4000,8000]}") == 0);
    agent_string_free(out);
    CHECK_OK(agent_context_retry_delays("{\"enabled\":false}", NTS, &out, &len));
    check_text(out, len);
    CHECK(strcmp(out, "{\"delays\":[]}") == 0);
    agent_string_free(out);
    uint64_t delay = 0;
    CHECK_OK(agent_context_retry_delay(NULL, 0, 6, &delay));
    CHECK_EQ_INT(delay, 60000);
    CHECK_OK(agent_context_retry_delay("{\"baseDelayMs\":500,\"maxAgentDelayMs\":1500}", NTS, 0, &delay));
    CHECK_EQ_INT(delay, 500);
    CHECK_ERR(agent_context_retry_delay("{\"maxRetries\":1.5}", NTS, 1, &delay), AGENT_ERR_INVALID_JSON,
              "\"maxRetries\" must be a whole number");
    CHECK_ERR(agent_context_retry_delays("{\"enabled\":1}", NTS, &out, &len), AGENT_ERR_INVALID_JSON,
              "\"enabled\" must be true or false");
    CHECK_ERR(agent_context_retry_delay(NULL, 0, 1, NULL), AGENT_ERR_NULL, "out_delay_ms is NULL");
}

static void append(AgentSession session, const char *entry) {
    CHECK_OK(agent_session_append(session, entry, NTS, NULL, NULL));
}

static void sessions(void) {
    char *out = NULL;
    size_t len = 0;
    AgentSession none = {0};
    CHECK_ERR(agent_session_estimate(none, &out, &len), AGENT_ERR_INVALID_HANDLE, "session");
    CHECK_ERR(agent_session_prepare_compaction(none, NULL, 0, &out, &len), AGENT_ERR_INVALID_HANDLE, "session");

    AgentSession session = {0};
    CHECK_OK(agent_session_in_memory(KIT, NTS, &session));
    /* Nothing to compact in an empty session. */
    CHECK_OK(agent_session_prepare_compaction(session, NULL, 0, &out, &len));
    check_text(out, len);
    CHECK(strcmp(out, "null") == 0);
    agent_string_free(out);

    /* Two turns of 100 and 50 tokens; the assistant's usage counts the first turn as 1000. */
    char user[512], assistant[512];
    char text[401];
    memset(text, 'q', 400);
    text[400] = '\0';
    snprintf(user, sizeof user,
             "{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"%s\",\"timestamp\":1}}", text);
    snprintf(assistant, sizeof assistant,
             "{\"type\":\"message\",\"message\":{\"role\":\"assistant\","
             "\"content\":[{\"type\":\"text\",\"text\":\"%.200s\"}],"
             "\"provider\":\"p\",\"model\":\"m\",\"stopReason\":\"stop\",\"timestamp\":2,"
             "\"usage\":{\"input\":990,\"output\":10,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":1000}}}",
             text);
    append(session, user);
    append(session, assistant);
    append(session, user);
    CHECK_OK(agent_session_estimate(session, &out, &len));
    check_text(out, len);
    CHECK_HAS(out, "\"tokens\":1100");
    CHECK_HAS(out, "\"usageTokens\":1000");
    CHECK_HAS(out, "\"lastUsageIndex\":1");
    agent_string_free(out);

    /* Keeping 100 tokens cuts at the second user message; the first turn is summarized. */
    CHECK_OK(agent_session_prepare_compaction(session, "{\"keepRecentTokens\":100}", NTS, &out, &len));
    check_text(out, len);
    CHECK_HAS(out, "\"isSplitTurn\":false");
    CHECK_HAS(out, "\"tokensBefore\":1100");
    CHECK_HAS(out, "\"previousSummary\":null");
    CHECK_HAS(out, "\"summarizerInput\":{\"history\":[{\"role\":\"user\"");
    CHECK_HAS(out, "\"turnPrefix\":[]");
    agent_string_free(out);
    CHECK_ERR(agent_session_prepare_compaction(session, "{\"keepRecentTokens\":\"all\"}", NTS, &out, &len),
              AGENT_ERR_INVALID_JSON, "\"keepRecentTokens\" must be a whole number");
    CHECK_ERR(agent_session_prepare_compaction(session, "[", NTS, &out, &len), AGENT_ERR_INVALID_JSON,
              "settings_json is not valid JSON");
    CHECK_ERR(agent_session_estimate(session, NULL, &len), AGENT_ERR_NULL, "out_json is NULL");

    CHECK_OK(agent_session_free(session));
    CHECK_ERR(agent_session_estimate(session, &out, &len), AGENT_ERR_INVALID_HANDLE, "session is a freed session");
}

int main(void) {
    estimates();
    threshold();
    file_lists();
    classification();
    retry_delays();
    sessions();
    printf("test_context: ok\n");
    return 0;
}
