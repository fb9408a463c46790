/* A C snippet of file scope (a callback): it must have the type the header declares. */
#include <stdio.h>
#include <libagent/agent.h>

/* SNIPPET */

AgentDoneFn snippet_callback = on_done;
