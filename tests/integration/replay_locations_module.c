/*
 * replay_locations_module.c — an object replay_locations.c dlopens: one
 * scope whose call site lives in a dlopen'd object.
 */
#include "orbit.h"

__attribute__((visibility("default"))) void replay_locations_module(void);

void replay_locations_module(void)
{
	ORBIT_SCOPE("loc module"); /* @module */
}
