/*
 * replay_values.c — a traced program for replay_values.py: values of
 * every kind with known samples, on two threads, so that the text outputs'
 * statistics can be checked exactly. Traced through the environment
 * (ORBIT_CAPTURE), like a user's program.
 *
 *   thread "main":   "write bytes" (ORBIT_UINT64) 1..1000 in order;
 *                    "temperature" (ORBIT_DOUBLE) -0.5, 0.25, 1.75, 1e300
 *                    then 2.5; "delta" (ORBIT_INT) -3 .. 3
 *   thread "worker": "write bytes" 5000 then 7 (two samples)
 */
#include <pthread.h>
#include <stdint.h>

#include "orbit.h"

static void *worker(void *arg)
{
	(void)arg;
	ORBIT_THREAD_NAME("worker");
	ORBIT_UINT64("write bytes", 5000);
	ORBIT_UINT64("write bytes", 7);
	return NULL;
}

int main(void)
{
	ORBIT_THREAD_NAME("main");
	for (uint64_t i = 1; i <= 1000; i++)
		ORBIT_UINT64("write bytes", i);
	static const double t[] = {-0.5, 0.25, 1.75, 1e300, 2.5};
	for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++)
		ORBIT_DOUBLE("temperature", t[i]);
	for (int d = -3; d <= 3; d++)
		ORBIT_INT("delta", d);
	{
		ORBIT_SCOPE("a scope");
	}
	pthread_t th;
	if (pthread_create(&th, NULL, worker, NULL) == 0)
		pthread_join(th, NULL);
	return 0;
}
