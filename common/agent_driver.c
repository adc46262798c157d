/* agent_driver.c: the table of agent drivers (agent_driver.h). */
#include <string.h>

#include "agent_driver.h"

static const struct agent_driver drivers[] = {
	{ "builtin", true, NULL },
	{ "claude-code", true, NULL },
	{ "command", true, NULL },   /* the API also needs AGENTTEST_AGENT_COMMAND set */
};

const struct agent_driver *agent_driver_lookup(const char *name)
{
	for (size_t i = 0; name && i < sizeof drivers / sizeof drivers[0]; i++)
		if (strcmp(drivers[i].name, name) == 0)
			return &drivers[i];
	return NULL;
}

const char *agent_driver_names(void)
{
	return "builtin, claude-code, command";
}
