/* loss.c — the loss account; see loss.h. */
#include "loss.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Field by field, over the lists of loss.h. */
#define COPY(f) to->f = from->f;
#define ADD(f) to->f += from->f;

void orbit__loss_of(struct orbit__loss *to, const Orbit__Loss *from)
{
	ORBIT__LOSS_FIELDS(COPY);
}

void orbit__loss_packet(Orbit__Loss *to, uint32_t ring, const struct orbit__loss *from)
{
	orbit__loss__init(to);
	to->ring = ring;
	ORBIT__LOSS_FIELDS(COPY);
}

uint64_t orbit__loss_sum(const struct orbit__loss *l)
{
	return l->lapped + l->writer_gone + l->backstop + l->at_end + l->flight_dropped;
}

void orbit__loss_add(struct orbit__loss *to, const struct orbit__loss *from)
{
	ORBIT__LOSS_FIELDS(ADD);
}

int orbit__loss_holds(uint64_t claimed, uint64_t delivered, const struct orbit__loss *l)
{
	return claimed == delivered + orbit__loss_sum(l);
}

int orbit__loss_page_holds(uint64_t reserved, uint64_t delivered, uint64_t lost)
{
	return reserved == delivered + lost;
}

void orbit__kernel_loss_of(struct orbit__kernel_loss *to, const Orbit__KernelLoss *from)
{
	ORBIT__KERNEL_LOSS_FIELDS(COPY);
}

void orbit__kernel_loss_add(struct orbit__kernel_loss *to, const struct orbit__kernel_loss *from)
{
	ORBIT__KERNEL_LOSS_FIELDS(ADD);
}

uint64_t orbit__kernel_loss_sum(const struct orbit__kernel_loss *k)
{
	return k->overrun + k->dropped;
}

int orbit__kernel_loss_holds(const struct orbit__kernel_loss *k, uint64_t delivered)
{
	if (k->unsent_pages != 0)
		return -1;
	return k->read_events == delivered;
}

/* ---- the account ---- */

/* The latest value of one ring's (or CPU's) loss; keeps *total the sum of
 * the latest values. */
static int latest(uint64_t **table, size_t n, uint32_t i, uint64_t value, uint64_t *total)
{
	if (i >= n)
		return 1; /* no such ring: left out */
	if (*table == NULL && (*table = calloc(n, sizeof **table)) == NULL)
		return -ENOMEM;
	*total += value - (*table)[i];
	(*table)[i] = value;
	return 1;
}

int orbit__loss_account_packet(struct orbit__loss_account *a, const Orbit__Packet *p)
{
	switch (p->body_case) {
	case ORBIT__PACKET__BODY_LOSS: {
		const Orbit__Loss *l = p->loss;
		if (l->ring >= ORBIT_MAX_RINGS)
			return 1;
		if (a->ring == NULL) {
			a->ring = calloc(ORBIT_MAX_RINGS, sizeof *a->ring);
			a->ring_seen = calloc(ORBIT_MAX_RINGS, sizeof *a->ring_seen);
			if (a->ring == NULL || a->ring_seen == NULL) {
				free(a->ring);
				free(a->ring_seen);
				a->ring = NULL;
				a->ring_seen = NULL;
				return -ENOMEM;
			}
		}
		struct orbit__loss *r = &a->ring[l->ring];
		a->total.records -= orbit__loss_sum(r);
		orbit__loss_of(r, l);
		a->total.records += orbit__loss_sum(r);
		a->ring_seen[l->ring] = 1;
		return 1;
	}
	case ORBIT__PACKET__BODY_PAGE_LOSS:
		return latest(&a->page, ORBIT_LOSS_PAGE_RINGS, p->page_loss->ring,
		              p->page_loss->records, &a->total.log_records);
	case ORBIT__PACKET__BODY_KERNEL_LOSS: {
		struct orbit__kernel_loss k;
		orbit__kernel_loss_of(&k, p->kernel_loss);
		return latest(&a->kernel, ORBIT_LOSS_PAGE_RINGS, p->kernel_loss->cpu,
		              orbit__kernel_loss_sum(&k), &a->total.kernel_events);
	}
	default:
		return 0;
	}
}

struct orbit__loss orbit__loss_account_ring(const struct orbit__loss_account *a, uint32_t r)
{
	struct orbit__loss none = {0};
	return a->ring != NULL && r < ORBIT_MAX_RINGS ? a->ring[r] : none;
}

void orbit__loss_account_free(struct orbit__loss_account *a)
{
	free(a->ring);
	free(a->ring_seen);
	free(a->page);
	free(a->kernel);
	memset(a, 0, sizeof *a);
}
