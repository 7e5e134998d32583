/*
 * replay_sched_scan.c — every stream's scheduling states, from its
 * capture's packets in file order; replay_sched_scan.h says when and what
 * it costs.
 *
 * Running out of memory costs a stream its states: the timeline is kept
 * (the run may be asking it already), marked failed, and fed no more; one
 * that failed before the run began is never handed out.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "replay_sched_scan.h"

struct scanned {
	uint32_t handshakes; /* of the file, up to and with this stream's */
	struct orbit__rp_sched_timeline *tl;
	int failed;
	int handed; /* get gave it out: it stays, whatever happens */
};

struct scanned_capture {
	struct scanned *streams;
	uint32_t n, cap;
	uint32_t handshakes;                 /* fed so far */
	long cur;                            /* the stream being fed, -1 none */
	struct orbit__rp_sched_decoder *dec; /* its formats */
	uint32_t cpus;
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

struct orbit_rp_sched_scan *orbit__rp_sched_scan_new(size_t n)
{
	struct orbit_rp_sched_scan *sc = calloc(1, sizeof *sc);
	if (sc == NULL || (sc->caps = calloc(n ? n : 1, sizeof *sc->caps)) == NULL) {
		free(sc);
		return NULL;
	}
	sc->n = n;
	for (size_t i = 0; i < n; i++)
		sc->caps[i].cur = -1;
	return sc;
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
	memset(s, 0, sizeof *s);
	s->handshakes = handshakes;
	return s;
}

static void fail(struct scanned *s)
{
	s->failed = 1;
	if (!s->handed) { /* nobody holds it: its memory back now */
		orbit__rp_sched_timeline_free(s->tl);
		s->tl = NULL;
	}
}

/* The stream being fed is over: its timeline finished. */
static void stream_done(struct scanned_capture *c)
{
	if (c->cur >= 0) {
		struct scanned *s = &c->streams[c->cur];
		if (s->tl != NULL && !s->failed && orbit__rp_sched_finish(s->tl, 0) != 0)
			fail(s);
	}
	c->cur = -1;
	orbit__rp_sched_decoder_free(c->dec);
	c->dec = NULL;
}

static void on_handshake(struct scanned_capture *c, const Orbit__KernelSched *k)
{
	const char *what;
	struct scanned *s;

	stream_done(c);
	c->handshakes++;
	if (k == NULL || orbit__rp_sched_decoder_of(k, &c->dec, &what) != 0)
		return;
	s = stream_add(c, c->handshakes);
	if (s == NULL)
		return;
	c->cur = (long)(s - c->streams);
	c->cpus = k->cpu_count;
	s->tl = orbit__rp_sched_timeline_new();
	/* What the listed threads did before their first event (replay_sched.h). */
	if (s->tl == NULL ||
	    (k->recording_ns != 0 &&
	     orbit__rp_sched_recording(s->tl, k->recording_ns, k->tids, k->n_tids) != 0))
		fail(s);
}

void orbit__rp_sched_scan_packet(struct orbit_rp_sched_scan *sc, size_t i, const Orbit__Packet *p)
{
	struct scanned_capture *c = &sc->caps[i];
	struct scanned *s;

	if (p->body_case == ORBIT__PACKET__BODY_HANDSHAKE) {
		on_handshake(c, p->handshake->kernel_sched);
		return;
	}
	if (c->cur < 0)
		return;
	s = &c->streams[c->cur];
	if (s->tl == NULL || s->failed)
		return;
	if (p->body_case == ORBIT__PACKET__BODY_KERNEL_PAGE && p->kernel_page->cpu < c->cpus) {
		/* A page that does not decode costs its own events; memory
		 * running out costs the stream its states. */
		const Orbit__KernelPage *k = p->kernel_page;
		if (orbit__rp_sched_add_page(s->tl, c->dec, k->cpu, k->page.data, k->page.len) ==
		    -ENOMEM)
			fail(s);
	} else if (p->body_case == ORBIT__PACKET__BODY_KERNEL_MARK) {
		if (orbit__rp_sched_mark(s->tl, p->kernel_mark->complete_ns) != 0)
			fail(s);
	}
}

void orbit__rp_sched_scan_end(struct orbit_rp_sched_scan *sc, size_t i)
{
	stream_done(&sc->caps[i]);
}

uint64_t orbit__rp_sched_scan_file(struct orbit_rp_sched_scan *sc, size_t i, const char *path)
{
	int err;
	uint64_t bytes = 0;
	struct orbit_capture_reader *r = orbit__capture_open(path, &err);
	if (r == NULL)
		return 0;
	for (;;) {
		struct orbit_capture_problem prob = {0, 0};
		Orbit__Packet *p = NULL;
		int rc = orbit__capture_next(r, &p, &prob);
		if (rc == 0 || (rc < 0 && prob.error != rc))
			break;
		if (rc < 0)
			continue;
		/* The run rejects what fails the format's checks: so does this. */
		if (orbit__packet_validate(p) == 0)
			orbit__rp_sched_scan_packet(sc, i, p);
		orbit__packet__free_unpacked(p, NULL);
	}
	orbit__rp_sched_scan_end(sc, i);
	bytes = orbit__capture_bytes_read(r);
	orbit__capture_close(r);
	return bytes;
}

const struct orbit__rp_sched_timeline *
orbit__rp_sched_scan_current(const struct orbit_rp_sched_scan *sc, size_t i)
{
	const struct scanned_capture *c;

	if (sc == NULL || i >= sc->n)
		return NULL;
	c = &sc->caps[i];
	return c->cur >= 0 && !c->streams[c->cur].failed ? c->streams[c->cur].tl : NULL;
}

const struct orbit__rp_sched_timeline *
orbit__rp_sched_scan_get(const struct orbit_rp_sched_scan *sc, size_t i, uint32_t handshakes)
{
	if (sc == NULL || i >= sc->n)
		return NULL;
	for (uint32_t k = 0; k < sc->caps[i].n; k++) {
		struct scanned *s = &sc->caps[i].streams[k];
		if (s->handshakes != handshakes || s->tl == NULL)
			continue;
		if (s->failed && !s->handed)
			return NULL;
		s->handed = 1;
		return s->tl;
	}
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
		orbit__rp_sched_decoder_free(sc->caps[i].dec);
	}
	free(sc->caps);
	free(sc);
}
