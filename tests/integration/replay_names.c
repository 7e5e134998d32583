/*
 * replay_names.c — a traced program whose threads have names (prctl
 * PR_SET_NAME, the comm the agent reads), for replay_names.py: a worker
 * named "before" writes five scopes "one", is renamed "after" and, once the
 * agent has read the names again (it does once a second), five scopes
 * "two"; a short-lived thread "brief" writes one scope "gone", has it
 * framed (orbit_flush) and ends, long before the stream's end. Run with
 * ORBIT_CAPTURE.
 */
#include <pthread.h>
#include <sys/prctl.h>
#include <time.h>

#include "orbit.h"

static void nap(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void *worker(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "before", 0, 0, 0);
	for (int i = 0; i < 5; i++) {
		ORBIT_SCOPE("one");
		nap(2);
	}
	orbit_flush(); /* its records framed with the first name */
	prctl(PR_SET_NAME, "after", 0, 0, 0);
	nap(1500); /* the agent reads the names again meanwhile */
	for (int i = 0; i < 5; i++) {
		ORBIT_SCOPE("two");
		nap(2);
	}
	return NULL;
}

static void *brief(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "brief", 0, 0, 0);
	{
		ORBIT_SCOPE("gone");
		nap(1);
	}
	orbit_flush(); /* framed, and so named, while it lives */
	return NULL;
}

int main(void)
{
	pthread_t w, b;
	if (orbit_init() != 0)
		return 1;
	pthread_create(&b, NULL, brief, NULL);
	pthread_join(b, NULL);
	pthread_create(&w, NULL, worker, NULL);
	pthread_join(w, NULL);
	orbit_shutdown();
	return 0;
}
