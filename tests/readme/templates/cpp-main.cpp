// A C++ snippet of statements: the body of main.
#include <libagent/agent.hpp>
#include <iostream>

int main() {
// SNIPPET
}
