/*
 * output_composite.c — the one output a stream writes to: the outputs the
 * configuration asks for, behind output.h's interface, and which stream
 * each of them carries.
 *
 *   ORBIT_COLLECTOR         the TCP output (main): one stream per connection,
 *                           and the spool beside it (below)
 *   ORBIT_CAPTURE           the file output (main): one stream
 *   both                    TCP (main), and the file as the local copy: it
 *                           takes the frames of the first stream the
 *                           collector answered, the same bytes
 *   ORBIT_FLIGHT            the flight ring in the segment: alone, it is
 *                           main; beside the others, it takes every frame of
 *                           each stream of the main output, starting over
 *                           with each one (output_flight.c)
 *
 * The stream's fate is its carrier's: the main output's, or the local
 * copy's or the spool's once one of them carries a stream of its own
 * (fallback). Only the carrier's events go to the owner; the copy and the
 * flight ring failing stop themselves, not the stream.
 *
 * A stream's Handshake frame settling on the main output is the
 * destination's answer (a file at once, a collector with its first Ack);
 * the local copy starts then, with that Handshake, so that it holds the
 * first answered stream byte for byte. That one frame is kept (copied) from
 * its send until the answer (with a spool, until the stream ends); every
 * other frame is handed to each output that carries it during the one send
 * call, the main output last (TCP takes the bytes: output.h).
 *
 * The spool (cfg->spool, ORBIT_SPOOL) is where what no collector
 * acknowledged is kept, in files of its own under cfg->spool_dir
 * (PROCESS-PID-STAMP-N.orbit.zst, mode 0600, all of a process's together at
 * most ORBIT_SPOOL_MAX bytes), each a capture orbit-replay reads and
 * `orbit-collector --ingest` takes into a collector's directory:
 *
 *  1. A stream that breaks with frames written and never acknowledged (the
 *     collector died, the link stalled): its Handshake frame, then those
 *     frames, byte for byte (TCP kept them: fate.kept), in one file, at
 *     once. With the collector's file of that stream, it holds the whole
 *     stream; ingest puts them together, each frame once.
 *  2. The collector is not there (an attempt failed before it answered:
 *     refused, unreachable, not a collector), no stream was answered for
 *     SPOOL_PATIENCE_MS (at the start or after a break), or exit comes
 *     with none answered (fallback): the stream goes to a spool file of
 *     its own, as a capture file, for the rest of the run; the collector
 *     is no longer tried. Waiting would cost what the rings cannot hold.
 *     (At exit, with ORBIT_CAPTURE, the local copy takes that role if it
 *     never had a stream.)
 *
 * Runs on the agent thread's loop only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "output.h"
#include "parse.h"

#define SPOOL_PATIENCE_MS 1000u /* no stream answered this long: the spool carries */

struct composite {
	struct orbit__output o;
	const struct orbit__config *cfg;
	struct orbit__output_events leaf_ev; /* what the outputs below say, to us */
	struct orbit__output *main;   /* the collector, the capture file or the flight ring */
	struct orbit__output *copy;   /* the local copy beside a collector */
	struct orbit__output *flight; /* the flight ring beside them */
	struct orbit__output *spool;  /* the spool carrying the stream (2.), once it does */
	int copy_on;                  /* the copy takes the open stream's frames */
	int copy_used;                /* the copy had its one stream */
	int copy_alone;               /* ... of its own, the collector never reached */
	int flight_on;                /* the flight ring takes the open stream's frames */
	int answered;                 /* the main output's stream was answered */
	int hurried;                  /* exit is near */
	int dead;                     /* refused, or the file failed: never ready again */
	uint8_t *hs;                  /* the open stream's Handshake, until answered */
	size_t hs_len;
	uint64_t hs_seq;
	/* the spool */
	uv_timer_t patience; /* SPOOL_PATIENCE_MS without an answered stream */
	int patience_open;
	uint64_t spooled;  /* bytes of this process's spool files so far */
	unsigned spools;   /* spool files made */
	char trouble[160]; /* the collector's, when the spool took its place */
	/* 1.: during a broken call, the spool file of the stream's tail */
	const struct orbit__fate *tail_fate; /* set during the call */
	struct orbit__output *tail;
	uint64_t tail_frames;
	int tail_failed;
	char tail_path[PATH_MAX];
};

static struct composite *of(struct orbit__output *o)
{
	return (struct composite *)o;
}

/* The output whose fate is the stream's. */
static struct orbit__output *carrier(const struct composite *c)
{
	return c->copy_alone ? c->copy : c->spool != NULL ? c->spool : c->main;
}

/* The stream is the main output's (not the copy's or the spool's alone). */
static int on_main(const struct composite *c)
{
	return !c->copy_alone && c->spool == NULL;
}

static void forget_handshake(struct composite *c)
{
	free(c->hs);
	c->hs = NULL;
	c->hs_len = 0;
}

static void copy_end(struct composite *c)
{
	if (c->copy_on)
		c->copy->ops->end(c->copy);
	c->copy_on = 0;
}

/* ---- the spool ---- */

/* dir and its missing parents, mode 0700: 0 or -errno (-EPERM: dir is not
 * this user's own, -ENOTDIR: not a directory). */
static int make_dirs(const char *dir)
{
	char p[PATH_MAX];
	size_t n = strlen(dir);
	if (n == 0 || n >= sizeof p)
		return -ENAMETOOLONG;
	memcpy(p, dir, n + 1);
	for (char *q = p + 1;; q++) {
		if (*q != '/' && *q != '\0')
			continue;
		char ch = *q;
		*q = '\0';
		if (mkdir(p, 0700) != 0 && errno != EEXIST)
			return -errno;
		*q = ch;
		if (ch == '\0')
			break;
	}
	/* The spool's own directory must be this user's alone: a directory
	 * (not a link to one), owned by us, writable by nobody else; in /tmp
	 * another user may have made the name first. */
	struct stat st;
	if (lstat(p, &st) != 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return st.st_uid == geteuid() && (st.st_mode & 022) == 0 ? 0 : -EPERM;
}

/* A new spool file, started: the file output, its path in path; NULL after
 * one line (the first time) when there can be none. */
static struct orbit__output *spool_open(struct composite *c, char *path, size_t len)
{
	const struct orbit__config *cfg = c->cfg;
	int err = make_dirs(cfg->spool_dir);
	if (err) {
		if (c->spools++ == 0)
			fprintf(stderr, "orbit: cannot make the spool directory %s: %s; no spool\n",
			        cfg->spool_dir,
			        err == -EPERM ? "it is not this user's own (another owns it, or "
			                        "others may write it)"
			        : err == -ENOTDIR ? "it is not a directory (or a symbolic link)"
			                          : strerror(-err));
		return NULL;
	}
	if (c->spooled >= cfg->spool_max) {
		if (c->spools++ == 0)
			fprintf(stderr, "orbit: the spool is full (ORBIT_SPOOL_MAX, %llu bytes)\n",
			        (unsigned long long)cfg->spool_max);
		return NULL;
	}
	/* PROCESS-PID-STAMP-N.orbit.zst, the name made safe as the
	 * collector makes its files' (format/parse.h). */
	char name[32];
	orbit__parse_name_for_file(program_invocation_short_name, name, sizeof name);
	time_t now = time(NULL);
	struct tm tm;
	char stamp[32] = "0";
	if (gmtime_r(&now, &tm) != NULL)
		strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
	int w = snprintf(path, len, "%s/%s-%d-%s-%u.orbit.zst", cfg->spool_dir, name, (int)getpid(),
	                 stamp, ++c->spools);
	if (w < 0 || (size_t)w >= len)
		return NULL; /* config.c left room for the name */
	struct orbit__output *f =
	    orbit__output_file(c->o.loop, path, ORBIT__FILE_SPOOL, cfg->spool_max - c->spooled);
	if (f == NULL)
		return NULL;
	f->ev = &c->leaf_ev;
	if (f->ops->start(f) != 0) { /* it said why */
		f->ops->close(f);
		return NULL;
	}
	return f;
}

/* 1.: the broken stream's frames no collector acknowledged, after its
 * Handshake, in a spool file of their own (c->tail, open during the broken
 * call: the stream's open frame follows them). 0, or -1 with none (and
 * then tail_failed). */
static int tail_begin(struct composite *c, const struct orbit__fate *fate)
{
	if (c->tail != NULL)
		return 0;
	char path[PATH_MAX];
	struct orbit__output *f = c->tail_failed ? NULL : spool_open(c, path, sizeof path);
	if (f == NULL) {
		c->tail_failed = 1;
		return -1;
	}
	snprintf(c->tail_path, sizeof c->tail_path, "%s", path);
	c->tail = f;
	c->tail_frames = 0;
	struct orbit__frame fr = {
	    .bytes = c->hs, .len = c->hs_len, .seq = c->hs_seq, .kind = ORBIT__FRAME_HANDSHAKE};
	int err = f->ops->send(f, &fr);
	for (size_t i = 0; err == 0 && i < fate->n_kept; i++) {
		const struct orbit__kept *k = &fate->kept[i];
		if (k->seq == c->hs_seq)
			continue; /* written above */
		fr = (struct orbit__frame){
		    .bytes = k->bytes, .len = k->len, .seq = k->seq, .kind = ORBIT__FRAME_DATA};
		err = f->ops->send(f, &fr);
		c->tail_frames += err == 0;
	}
	c->tail_failed = err != 0;
	return 0;
}

/* The broken call is over: the tail file is complete. */
static void tail_end(struct composite *c)
{
	struct orbit__output *f = c->tail;
	c->tail = NULL;
	c->tail_fate = NULL;
	if (f == NULL)
		return;
	uint64_t size = orbit__output_file_size(f);
	f->ops->end(f);
	f->ops->close(f);
	if (c->tail_frames == 0) { /* the Handshake alone: nothing to keep */
		unlink(c->tail_path);
		return;
	}
	c->spooled += size;
	if (!c->tail_failed)
		fprintf(stderr,
		        "orbit: the %llu frame(s) collector %s had not acknowledged are in the "
		        "spool %s\n",
		        (unsigned long long)c->tail_frames, c->cfg->collector, c->tail_path);
}

/* The collector's output, once the spool carries the stream. */
static void on_let_go(uv_timer_t *t)
{
	struct composite *c = t->data;
	if (c->main != NULL)
		c->main->ops->close(c->main);
	c->main = NULL;
}

static void patience_stop(struct composite *c)
{
	if (c->patience_open)
		uv_timer_stop(&c->patience);
}

static void on_patience(uv_timer_t *t);

static void patience_start(struct composite *c)
{
	if (c->patience_open && !c->dead && on_main(c))
		uv_timer_start(&c->patience, on_patience, SPOOL_PATIENCE_MS, 0);
}

/* 2.: the spool carries the stream from now on, the collector is let go;
 * its line says why: the collector "is not answering (...)", or "is older
 * than this agent (...)". */
static int spool_carry_because(struct composite *c, const char *what)
{
	if (c->dead || !c->cfg->spool || !on_main(c) || !c->patience_open)
		return 0;
	char path[PATH_MAX];
	struct orbit__output *f = spool_open(c, path, sizeof path);
	if (f == NULL)
		return 0;
	patience_stop(c);
	snprintf(c->trouble, sizeof c->trouble, "%s", c->main->ops->trouble(c->main));
	/* Its open stream, if any, was never answered: it took no records.
	 * The spool is the carrier now, so nothing the collector's output
	 * says on its way out reaches the owner; it is closed from the loop
	 * (this may be its own callback). */
	c->spool = f;
	uv_timer_start(&c->patience, on_let_go, 0, 0);
	c->answered = 1;
	forget_handshake(c);
	if (c->flight != NULL) /* the stream the spool carries, from its Handshake */
		c->flight_on = c->flight->ops->start(c->flight) == 0;
	fprintf(stderr,
	        "orbit: collector %s %s%s%s%s; the trace goes to the spool %s "
	        "(orbit-collector --ingest takes it into a collector's directory)\n",
	        c->cfg->collector, what, c->trouble[0] ? " (" : "", c->trouble,
	        c->trouble[0] ? ")" : "", path);
	c->o.ev->ready(c->o.ev->ctx, &c->o); /* answered at once: a file */
	return 1;
}

static int spool_carry(struct composite *c)
{
	return spool_carry_because(c, "is not answering");
}

static int composite_fallback(struct orbit__output *o);
static int take_over(struct composite *c, int older);

static void on_patience(uv_timer_t *t)
{
	struct composite *c = t->data;
	if (!c->answered)
		composite_fallback(&c->o);
}

/* A stream begins on the main output: the flight ring starts over with
 * it, from its Handshake on. */
static void main_ready(struct composite *c)
{
	c->answered = 0;
	if (c->flight != NULL)
		c->flight_on = c->flight->ops->start(c->flight) == 0;
}

/* The main output's stream was answered: the local copy, if it never had a
 * stream, takes this one from its Handshake on. */
static void main_answered(struct composite *c)
{
	c->answered = 1;
	patience_stop(c);
	if (c->copy != NULL && !c->copy_used && !c->copy_alone) {
		c->copy_used = 1;
		c->copy_on = c->copy->ops->start(c->copy) == 0;
		struct orbit__frame f = {.bytes = c->hs,
		                         .len = c->hs_len,
		                         .seq = c->hs_seq,
		                         .kind = ORBIT__FRAME_HANDSHAKE};
		if (c->copy_on && (c->hs == NULL || c->copy->ops->send(c->copy, &f) != 0))
			c->copy_on = 0;
	}
	if (!c->cfg->spool) /* the spool wants it if the stream breaks (1.) */
		forget_handshake(c);
}

/* ---- what the outputs below say ---- */

static void on_ready(void *ctx, struct orbit__output *o)
{
	struct composite *c = ctx;
	if (o != c->main || !on_main(c)) /* the copy or the spool carries the stream now */
		return;
	main_ready(c);
	c->o.ev->ready(c->o.ev->ctx, &c->o);
}

static void on_settled(void *ctx, struct orbit__output *o, uint64_t seq, int ok)
{
	struct composite *c = ctx;
	if (o != carrier(c)) /* the copy's fate does not change the stream's */
		return;
	if (ok && !c->answered && on_main(c))
		main_answered(c);
	c->o.ev->settled(c->o.ev->ctx, &c->o, seq, ok);
}

static void on_broken(void *ctx, struct orbit__output *o, int fatal, const struct orbit__fate *fate)
{
	struct composite *c = ctx;
	if (o != carrier(c)) {
		if (o == c->flight)
			c->flight_on = 0;
		else if (o == c->copy)
			c->copy_on = 0; /* the copy stops; the stream goes on */
		return;
	}
	if (fatal && fate->older && on_main(c)) {
		/* An older collector: the trace stays here, if it can. The
		 * stream's Handshake was never answered: it took no records. */
		if (take_over(c, 1))
			return;
		fprintf(stderr,
		        "orbit: collector %s is older than this agent (%s); tracing is off\n",
		        c->cfg->collector, c->main->ops->trouble(c->main));
	}
	struct orbit__fate up = *fate;
	up.kept = NULL; /* ours alone, and only during this call */
	up.n_kept = 0;
	if (c->cfg->spool && c->patience_open && c->answered && !fatal && on_main(c) &&
	    c->hs != NULL) {
		/* What was not acknowledged, and the open frame the stream may
		 * still send, go to the tail file: none of it is certainly lost. */
		c->tail_failed = 0;
		if (tail_begin(c, fate) == 0 && !c->tail_failed) {
			c->tail_fate = fate;
			up.late = 1;
			up.certain = 0;
		}
	}
	c->answered = 0;
	copy_end(c);
	if (fatal)
		c->dead = 1;
	else
		patience_start(c); /* the next stream has as long to be answered */
	if (c->tail == NULL) {
		forget_handshake(c);
		/* Last: the owner may close (and free) c as it hears this. */
		c->o.ev->broken(c->o.ev->ctx, &c->o, fatal, &up);
		return;
	}
	/* The owner may close c as it hears this, but c lives on until its
	 * timer is closed (release, patience_open), and the tail with it. */
	c->o.ev->broken(c->o.ev->ctx, &c->o, fatal, &up);
	tail_end(c);
	forget_handshake(c);
}

static void on_idle(void *ctx, struct orbit__output *o)
{
	struct composite *c = ctx;
	if (o == carrier(c) && c->o.ev->idle != NULL)
		c->o.ev->idle(c->o.ev->ctx, &c->o);
}

/* The collector was not reached: the spool takes the stream at once (2.);
 * at exit (hurried) the local copy or the spool does, or the owner stops
 * waiting for nothing. */
static void on_unreachable(void *ctx, struct orbit__output *o)
{
	struct composite *c = ctx;
	if (o != c->main || !on_main(c) || c->answered)
		return;
	int took = c->hurried ? composite_fallback(&c->o) : spool_carry(c);
	if (!took && c->hurried && c->o.ev->unreachable != NULL)
		c->o.ev->unreachable(c->o.ev->ctx, &c->o);
}

/* ---- the interface ---- */

static int composite_start(struct orbit__output *o)
{
	struct composite *c = of(o);
	if (c->cfg->spool && uv_timer_init(o->loop, &c->patience) == 0) {
		c->patience.data = c;
		c->patience_open = 1;
	}
	int err = c->main->ops->start(c->main);
	if (err == 0) /* ready now (a file): the owner begins its stream */
		main_ready(c);
	if (err == 1)
		patience_start(c);
	return err;
}

static int composite_send(struct orbit__output *o, struct orbit__frame *f)
{
	struct composite *c = of(o);
	if (c->tail_fate != NULL) { /* the broken stream's open frame (1.) */
		if (c->tail_failed || c->tail->ops->send(c->tail, f) != 0) {
			c->tail_failed = 1;
			return -EIO;
		}
		c->tail_frames++;
		return 0;
	}
	if (f->kind == ORBIT__FRAME_HANDSHAKE && on_main(c) &&
	    ((c->copy != NULL && !c->copy_used) || c->cfg->spool)) {
		/* Kept for the local copy, which starts once this stream is
		 * answered (the copy is the first answered stream's bytes), and
		 * for the spool, if the stream breaks (1.). */
		forget_handshake(c);
		c->hs = malloc(f->len);
		if (c->hs != NULL) {
			memcpy(c->hs, f->bytes, f->len);
			c->hs_len = f->len;
			c->hs_seq = f->seq;
		}
	}
	/* The main output last: TCP takes the frame's bytes, and may free
	 * them before it returns (output.h, orbit__frame_take). */
	if (c->flight_on && c->flight->ops->send(c->flight, f) != 0)
		c->flight_on = 0;
	if (c->copy_on && c->copy->ops->send(c->copy, f) != 0) {
		c->copy_on = 0;
		if (c->copy_alone)
			return -EIO;
	}
	if (c->spool != NULL)
		return c->spool->ops->send(c->spool, f);
	return c->copy_alone ? 0 : c->main->ops->send(c->main, f);
}

static size_t composite_pending(const struct orbit__output *o)
{
	const struct composite *c = (const struct composite *)o;
	const struct orbit__output *k = carrier(c);
	return k->ops->pending(k);
}

static int composite_coming(const struct orbit__output *o)
{
	const struct composite *c = (const struct composite *)o;
	return !c->dead && on_main(c) && c->main->ops->coming(c->main);
}

static void composite_hurry(struct orbit__output *o)
{
	struct composite *c = of(o);
	c->hurried = 1;
	if (on_main(c))
		c->main->ops->hurry(c->main);
}

static void composite_end(struct orbit__output *o)
{
	struct composite *c = of(o);
	patience_stop(c);
	copy_end(c);
	if (c->flight_on)
		c->flight->ops->end(c->flight);
	c->flight_on = 0;
	if (c->spool != NULL)
		c->spool->ops->end(c->spool);
	else if (!c->copy_alone)
		c->main->ops->end(c->main);
}

static void composite_give_up(struct orbit__output *o)
{
	struct composite *c = of(o);
	if (on_main(c)) /* a file settled every frame when it wrote it */
		c->main->ops->give_up(c->main);
}

static const char *composite_trouble(const struct orbit__output *o)
{
	const struct composite *c = (const struct composite *)o;
	return c->spool == NULL ? c->main->ops->trouble(c->main) : c->trouble;
}

static void on_patience_closed(uv_handle_t *h)
{
	free(h->data);
}

/* Closes (or, in a forked child, forgets) every output below, then frees
 * c (once its timer is closed); the handshake copy is ours, in the child's
 * memory too. */
static void release(struct composite *c, int forget, int copies)
{
	if (!forget)
		tail_end(c); /* closed during a broken call: the tail file is whole */
	struct orbit__output *leaf[] = {c->flight, c->copy, c->spool, c->main};
	for (size_t i = 0; i < sizeof leaf / sizeof leaf[0]; i++)
		if (leaf[i] != NULL && forget)
			leaf[i]->ops->forget(leaf[i], copies);
		else if (leaf[i] != NULL)
			leaf[i]->ops->close(leaf[i]);
	free(c->hs);
	c->hs = NULL;
	if (c->patience_open && !forget) {
		uv_close((uv_handle_t *)&c->patience, on_patience_closed);
		return;
	}
	free(c);
}

static void composite_close(struct orbit__output *o)
{
	release(of(o), 0, 0);
}

static void composite_forget(struct orbit__output *o, int copies)
{
	release(of(o), 1, copies);
}

/* No stream was answered in time, or exit is here and none was: the local
 * copy, if it never had a stream, carries one alone, with everything the
 * rings hold; else the spool does (2.). */
static int composite_fallback(struct orbit__output *o)
{
	return take_over(of(o), 0);
}

/* The local copy or the spool takes the stream (older: the collector
 * refused its protocol version). */
static int take_over(struct composite *c, int older)
{
	if (c->dead || !on_main(c))
		return 0;
	if (c->copy == NULL || c->copy_used)
		return spool_carry_because(c,
		                           older ? "is older than this agent" : "is not answering");
	c->copy_used = 1;
	forget_handshake(c);
	if (c->copy->ops->start(c->copy) != 0)
		return 0;
	patience_stop(c);
	c->copy_on = 1;
	c->copy_alone = 1;
	if (c->flight != NULL) /* the stream the copy carries, from its Handshake */
		c->flight_on = c->flight->ops->start(c->flight) == 0;
	const char *trouble = c->main->ops->trouble(c->main);
	fprintf(stderr, "orbit: collector %s %s%s%s%s; the trace is in the local copy only\n",
	        c->cfg->collector, older ? "is older than this agent" : "not reached",
	        trouble[0] ? " (" : "", trouble, trouble[0] ? ")" : "");
	c->o.ev->ready(c->o.ev->ctx, &c->o); /* answered at once: a file */
	return 1;
}

static const struct orbit__output_ops composite_ops = {
    .start = composite_start,
    .send = composite_send,
    .pending = composite_pending,
    .coming = composite_coming,
    .hurry = composite_hurry,
    .end = composite_end,
    .give_up = composite_give_up,
    .trouble = composite_trouble,
    .close = composite_close,
    .forget = composite_forget,
    .fallback = composite_fallback,
};

int orbit__output_composite(struct orbit__output **out, uv_loop_t *loop,
                            const struct orbit__config *cfg, struct orbit__segment *seg)
{
	*out = NULL;
	if ((cfg->collector_set && !cfg->collector_ok) || (cfg->capture_set && !cfg->capture_ok))
		return -EINVAL; /* said by the configuration */
	struct composite *c = calloc(1, sizeof *c);
	if (c == NULL)
		return -ENOMEM;
	c->o = (struct orbit__output){.ops = &composite_ops, .loop = loop};
	c->cfg = cfg;
	c->leaf_ev = (struct orbit__output_events){.ctx = c,
	                                           .ready = on_ready,
	                                           .settled = on_settled,
	                                           .broken = on_broken,
	                                           .idle = on_idle,
	                                           .unreachable = on_unreachable};
	int want_copy = cfg->collector_set && cfg->capture_set;
	if (cfg->collector_set)
		c->main = orbit__output_tcp(loop, cfg);
	else if (cfg->capture_set)
		c->main = orbit__output_file(loop, cfg->capture, ORBIT__FILE_CAPTURE, UINT64_MAX);
	if (want_copy)
		c->copy = orbit__output_file(loop, cfg->capture, ORBIT__FILE_COPY, UINT64_MAX);
	if (cfg->flight)
		c->flight = orbit__output_flight(loop, seg);
	if (c->main == NULL && c->flight != NULL) { /* the flight ring alone carries the stream */
		c->main = c->flight;
		c->flight = NULL;
	}
	if (c->main == NULL || (want_copy && c->copy == NULL) ||
	    (cfg->flight && c->main != NULL && c->flight == NULL &&
	     (cfg->collector_set || cfg->capture_set))) {
		release(c, 0, 0);
		return -ENOMEM;
	}
	struct orbit__output *leaf[] = {c->main, c->copy, c->flight};
	for (size_t i = 0; i < sizeof leaf / sizeof leaf[0]; i++)
		if (leaf[i] != NULL)
			leaf[i]->ev = &c->leaf_ev;
	*out = &c->o;
	return 0;
}
