// Positive control for the sanitized C++ build (make cpp-test): a deliberate heap overflow, compiled
// and linked with the flags LIBAGENT_CPP_SANITIZE gives the tests. It must be reported
// ("AddressSanitizer: heap-buffer-overflow"); if it is not, the GoogleTest suite ran uninstrumented.
// Not a test: CMake builds it, the Makefile runs it and requires the report.
#include <libagent/agent.hpp>

#include <cstdio>
#include <vector>

int main(int argc, char **) {
    std::printf("libagent %s\n", agent_version());
    std::vector<int> values(4);
    int *data = values.data();
    data[3 + argc] = 1;  // one past the end on purpose (argc is 1)
    std::printf("no report (%d)\n", data[0]);
    return 0;
}
