/*
 * loss_unpublished.c — a traced program whose stream ends with a claim it
 * never published (at_end, docs/format.md 4.6), for loss_agree.sh: N
 * scopes, then one claim whose record is never written (orbit__claim puts
 * only its marker in the slot), then exit. The agent's final pass finds the
 * claim handed out and unpublished: the stream's last Loss says at_end 1.
 * Prints the claims it made, 2 N + 1.
 *
 *   loss_unpublished N
 */
#include <stdio.h>
#include <stdlib.h>

#include "orbit.h"

int main(int argc, char **argv)
{
	long n = argc == 2 ? atol(argv[1]) : -1;
	if (n < 0) {
		fprintf(stderr, "usage: loss_unpublished N\n");
		return 2;
	}
	for (long i = 0; i < n; i++) {
		ORBIT_SCOPE("published");
	}
	struct orbit__thread *t = orbit__self();
	if (t == NULL) {
		fprintf(stderr, "loss_unpublished: no segment (is tracing on?)\n");
		return 3;
	}
	uint64_t claim;
	orbit__claim(t, &claim); /* never published */
	printf("%ld\n", 2 * n + 1);
	return 0;
}
