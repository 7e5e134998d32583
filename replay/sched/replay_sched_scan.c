/*
 * replay_sched_scan.c — every stream's scheduling states, read before the
 * run; replay_sched_scan.h says why and what it costs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "replay_sched_scan.h"

struct scanned {
	uint32_t handshakes; /* of the file, up to and with this stream's */
	struct orbit__rp_sched_timeline *tl;
};

struct scanned_capture {
	struct scanned *streams;
	uint32_t n, cap;
};

struct orbit_rp_sched_scan {
	struct scanned_capture *caps;
	size_t n;
};

int orbit__rp_sched_decoder_of(const Orbit__KernelSched *k, struct orbit__rp_sched_decoder **out,
                               const char **what)
{
	struct orbit__rp_sched_decoder *d = orbit__rp_sched_decoder_new();
	int err;

	*out = NULL;
	*what = "the decoder";
	if (d == NULL)
		return -ENOMEM;
	*what = "header_page";
	err = orbit__rp_sched_header_page(d, k->header_page ? k->header_page : "",
	                                  k->header_page ? strlen(k->header_page) : 0);
	for (size_t i = 0; err == 0 && i < k->n_events; i++) {
		const Orbit__KernelEventFormat *f = k->events[i];
		if (f->format == NULL)
			continue;
		*what = "an event format";
		err = orbit__rp_sched_format(d, f->system ? f->system : "", f->format,
		                             strlen(f->format));
	}
	if (err == 0) {
		*what = "the formats";
		err = orbit__rp_sched_ready(d);
	}
	if (err != 0) {
		orbit__rp_sched_decoder_free(d);
		return err;
	}
	*out = d;
	return 0;
}

/* The first packet of a file: whether it is worth reading for its kernel
 * pages (a Handshake with a KernelSched, or no Handshake at all: damaged,
 * read it all to be sure). */
static int worth(const char *path)
{
	int err, yes = 0;
	struct orbit_capture_reader *r = orbit__capture_open(path, &err);
	if (r == NULL)
		return 0;
	for (;;) {
		struct orbit_capture_problem prob = {0, 0};
		Orbit__Packet *p = NULL;
		int rc = orbit__capture_next(r, &p, &prob);
		if (rc == 0 || (rc < 0 && prob.error != rc))
			break; /* the end, or an error the reader cannot pass */
		if (rc < 0) {
			yes = 1; /* a damaged first frame: the handshake may be lost */
			continue;
		}
		yes = p->body_case != ORBIT__PACKET__BODY_HANDSHAKE ||
		      p->handshake->kernel_sched != NULL;
		orbit__packet__free_unpacked(p, NULL);
		break;
	}
	orbit__capture_close(r);
	return yes;
}

static struct scanned *stream_add(struct scanned_capture *c, uint32_t handshakes)
{
	if (c->n == c->cap) {
		uint32_t cap = c->cap ? c->cap * 2 : 4;
		struct scanned *s = realloc(c->streams, cap * sizeof *s);
		if (s == NULL)
			return NULL;
		c->streams = s;
		c->cap = cap;
	}
	struct scanned *s = &c->streams[c->n++];
	s->handshakes = handshakes;
	s->tl = NULL;
	return s;
}

static void scan_file(const char *path, struct scanned_capture *c)
{
	int err;
	uint32_t handshakes = 0, cpus = 0;
	struct orbit__rp_sched_decoder *d = NULL;
	struct scanned *cur = NULL;
	struct orbit_capture_reader *r = orbit__capture_open(path, &err);
	if (r == NULL)
		return;
	for (;;) {
		struct orbit_capture_problem prob = {0, 0};
		Orbit__Packet *p = NULL;
		int rc = orbit__capture_next(r, &p, &prob);
		if (rc == 0 || (rc < 0 && prob.error != rc))
			break;
		if (rc < 0)
			continue;
		/* The run rejects what fails the format's checks: so does this. */
		if (orbit__packet_validate(p) != 0) {
			orbit__packet__free_unpacked(p, NULL);
			continue;
		}
		if (p->body_case == ORBIT__PACKET__BODY_HANDSHAKE) {
			const Orbit__KernelSched *k = p->handshake->kernel_sched;
			const char *what;
			handshakes++;
			orbit__rp_sched_decoder_free(d);
			d = NULL;
			cur = NULL;
			if (k != NULL && orbit__rp_sched_decoder_of(k, &d, &what) == 0) {
				cur = stream_add(c, handshakes);
				if (cur != NULL)
					cur->tl = orbit__rp_sched_timeline_new();
				/* What the listed threads did before their first
				 * event (replay_sched.h). */
				if (cur != NULL && cur->tl != NULL && k->recording_ns != 0 &&
				    orbit__rp_sched_recording(cur->tl, k->recording_ns, k->tids,
				                              k->n_tids) != 0) {
					orbit__rp_sched_timeline_free(cur->tl);
					cur->tl = NULL;
				}
				cpus = k->cpu_count;
			}
		} else if (p->body_case == ORBIT__PACKET__BODY_KERNEL_PAGE && cur != NULL &&
		           cur->tl != NULL && p->kernel_page->cpu < cpus) {
			/* A page that does not decode costs its own events; memory
			 * running out costs the stream its states. */
			const Orbit__KernelPage *k = p->kernel_page;
			if (orbit__rp_sched_add_page(cur->tl, d, k->cpu, k->page.data,
			                             k->page.len) == -ENOMEM) {
				orbit__rp_sched_timeline_free(cur->tl);
				cur->tl = NULL;
			}
		}
		orbit__packet__free_unpacked(p, NULL);
	}
	orbit__rp_sched_decoder_free(d);
	orbit__capture_close(r);
	for (uint32_t i = 0; i < c->n; i++)
		if (c->streams[i].tl != NULL && orbit__rp_sched_finish(c->streams[i].tl, 0) != 0) {
			orbit__rp_sched_timeline_free(c->streams[i].tl);
			c->streams[i].tl = NULL;
		}
}

struct orbit_rp_sched_scan *orbit__rp_sched_scan(const char *const *paths, size_t n)
{
	struct orbit_rp_sched_scan *sc = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!worth(paths[i]))
			continue;
		if (sc == NULL) {
			sc = calloc(1, sizeof *sc);
			if (sc == NULL || (sc->caps = calloc(n, sizeof *sc->caps)) == NULL) {
				free(sc);
				return NULL;
			}
			sc->n = n;
		}
		scan_file(paths[i], &sc->caps[i]);
	}
	return sc;
}

const struct orbit__rp_sched_timeline *
orbit__rp_sched_scan_get(const struct orbit_rp_sched_scan *sc, size_t i, uint32_t handshakes)
{
	if (sc == NULL || i >= sc->n)
		return NULL;
	for (uint32_t k = 0; k < sc->caps[i].n; k++)
		if (sc->caps[i].streams[k].handshakes == handshakes)
			return sc->caps[i].streams[k].tl;
	return NULL;
}

void orbit__rp_sched_scan_free(struct orbit_rp_sched_scan *sc)
{
	if (sc == NULL)
		return;
	for (size_t i = 0; i < sc->n; i++) {
		for (uint32_t k = 0; k < sc->caps[i].n; k++)
			orbit__rp_sched_timeline_free(sc->caps[i].streams[k].tl);
		free(sc->caps[i].streams);
	}
	free(sc->caps);
	free(sc);
}
