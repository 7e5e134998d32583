/*
 * replay_origin.c — the time origin: what --log and relative --from/--to
 * count from.
 */
#include "replay_origin.h"

uint64_t orbit__rp_origin(const struct orbit_rp_timeline *tl)
{
	uint64_t hs = UINT64_MAX, any = UINT64_MAX;
	for (size_t i = 0; i < tl->n; i++) {
		const Orbit__Packet *p = tl->srcs[i].peek;
		if (p == NULL)
			continue;
		if (p->body_case == ORBIT__PACKET__BODY_HANDSHAKE &&
		    p->handshake->monotonic_ns < hs)
			hs = p->handshake->monotonic_ns;
		if (tl->srcs[i].key < any && tl->srcs[i].key != 0)
			any = tl->srcs[i].key;
	}
	return hs != UINT64_MAX ? hs : any != UINT64_MAX ? any : 0;
}
