/*
 * replay_clickhouse_hostile.c — a traced program for replay_clickhouse.py:
 * three threads with hostile names write nested scopes, async spans,
 * values, log lines and markers named with quotes, backslashes, tabs,
 * newlines, control bytes, UTF-8, bytes that are not UTF-8, SQL and a name
 * longer than a record holds. Traced through the environment
 * (ORBIT_CAPTURE), like a user's program.
 *
 *   replay_clickhouse_hostile [ROUNDS]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "orbit.h"

static const char *const names[] = {
    "plain",
    "'); DROP TABLE scopes; --",
    "quote ' double \" backtick `",
    "back\\slash \\' \\N",
    "tab\there",
    "new\nline\r\nand cr\r",
    "control \x01\x02\x1b[31m\x7f bytes",
    "utf-8 \xc3\xa9 \xe6\xbc\xa2 \xf0\x9f\x9a\x80",
    "not utf-8 \xff\xfe\xc0\xaf",
    "%s%n%x format",
    "NULL",
    "",
    ("a name longer than one record can hold, so it travels in continuation records "
     "after its head: 0123456789abcdef0123456789abcdef0123456789abcdef"),
};
#define NNAMES (sizeof names / sizeof names[0])

static int rounds = 20;

static uint64_t spin(uint64_t x, int n)
{
	for (int i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

static void *thread(void *arg)
{
	uintptr_t t = (uintptr_t)arg;
	char tname[64];
	snprintf(tname, sizeof tname, "%s #%u", names[(t * 5 + 1) % NNAMES], (unsigned)t);
	ORBIT_THREAD_NAME(tname);
	uint64_t x = t;
	for (int r = 0; r < rounds; r++) {
		for (size_t i = 0; i < NNAMES; i++) {
			ORBIT_SCOPE(names[i]);
			{
				ORBIT_SCOPE(names[(i + 1) % NNAMES]);
				x = spin(x, 200 + (int)((x >> 40) % 800));
			}
			ORBIT_START(names[(i + 2) % NNAMES]);
			x = spin(x, 100);
			ORBIT_STOP();
			uint64_t id = (uint64_t)t << 40 | (uint64_t)r << 16 | i;
			ORBIT_START_ASYNC(names[i], id);
			x = spin(x, 50);
			ORBIT_STOP_ASYNC(id);
			ORBIT_INT(names[i], (int)(x % 1000) - 500);
			ORBIT_UINT64(names[(i + 3) % NNAMES], x);
			ORBIT_DOUBLE(names[(i + 4) % NNAMES], (double)(x % 100000) / 7.0);
			ORBIT_LOG("%s", names[i]);
		}
		static const char marker[8] = {0, 1, '\'', '"', '\\', '\n', '\t', (char)0xff};
		orbit_marker(marker, sizeof marker);
	}
	return (void *)(uintptr_t)x;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atoi(argv[1]);
	pthread_t th[3];
	for (uintptr_t t = 0; t < 3; t++)
		pthread_create(&th[t], NULL, thread, (void *)t);
	for (int t = 0; t < 3; t++)
		pthread_join(th[t], NULL);
	return 0;
}
