/*
 * replay_attrs.c — a traced program for replay_attrs.py: every macro that
 * takes a colour or a group id, three times, with known values. Traced
 * through the environment (ORBIT_CAPTURE), like a user's program.
 */
#include <stdint.h>

#include "orbit.h"

int main(void)
{
	for (uint64_t i = 0; i < 3; i++) {
		{
			ORBIT_SCOPE_WITH_GROUP_AND_COLOR("grouped", 1000 + i, 0x11223344u);
			ORBIT_SCOPE_WITH_COLOR("colored", 0xff0000ffu);
			{
				ORBIT_SCOPE("plain");
			}
		}
		ORBIT_START_WITH_GROUP_AND_COLOR("started", UINT64_MAX - i, 0x00ff00ffu);
		ORBIT_STOP();
		ORBIT_START("started plain");
		ORBIT_STOP();
		ORBIT_START_ASYNC_WITH_COLOR("async colored", 77 + i, 0x0000ffffu);
		ORBIT_STOP_ASYNC(77 + i);
		ORBIT_INT_WITH_COLOR("value colored", (int)i, 0xabcdef01u);
	}
	return 0;
}
