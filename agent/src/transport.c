/* transport.c — frames to a collector or a capture file; see transport.h. */
#include "transport.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "frame.h"
#include "ftrace_page.h"
#include "logs.h"
#include "orbit.h"

#ifndef ORBIT_VERSION
#define ORBIT_VERSION "0"
#endif

#define FRAME_TARGET (1u << 20) /* content of one frame, about */
#define BACKOFF_MIN_MS 100u
#define BACKOFF_MAX_MS 5000u
#define DEFAULT_SEND_BUFFER (64ull << 20)
/* The fastest level that keeps scope traffic well under 5 bytes an event:
 * 2.2 on examples/emit's varied names, where -3 gives 4.1 and 1 gives 1.9
 * (docs/performance.md). */
#define DEFAULT_ZSTD_LEVEL (-1)
#define REPLY_MAX 256u
#define KEEPALIVE_MS 30000u /* well inside the collector's idle timeout */
#define REJECTED "orbit-collector: rejected"

enum mode { MODE_NONE, MODE_FILE, MODE_TCP };
enum state { IDLE, RESOLVING, CONNECTING, STREAMING, CLOSING, DEAD };

/* A frame on its way out: written in order, freed in its write callback. */
struct qframe {
	struct qframe *next;
	uv_write_t req;
	uint8_t *bytes;
	size_t len;
	uint32_t records[ORBIT_MAX_RINGS]; /* per ring, for counting unsent */
};

struct ring_loss {
	uint64_t lapped, gone, backstop;
};

static struct {
	uv_loop_t *loop;
	struct orbit__drain *drain;
	struct orbit__clock_conv *clock;
	enum mode mode;
	enum state state;
	uint32_t rings;

	int fd; /* MODE_FILE, or the local copy with tee */
	int tee, tee_opened;
	char target[PATH_MAX]; /* the file */
	char coll[300];        /* the collector, as given */
	char host[256], port[16];
	uv_getaddrinfo_t gai;
	uv_connect_t conn;
	uv_tcp_t tcp;
	int tcp_open;
	uv_timer_t retry;
	int retry_open;
	uint64_t backoff_ms;
	int told; /* a connect problem was reported; quiet until it clears */
	char reply[REPLY_MAX];
	size_t reply_len;

	struct orbit_frame_writer fw;
	uint32_t frame_records[ORBIT_MAX_RINGS];
	struct qframe *head, *tail;
	size_t queued, limit;
	void (*idle_cb)(void);
	uint64_t last_frame_ms; /* when the last frame went out */

	/* the stream */
	uint64_t start[ORBIT_MAX_RINGS];
	struct ring_loss base[ORBIT_MAX_RINGS];
	struct ring_loss sent[ORBIT_MAX_RINGS];
	uint64_t unsent[ORBIT_MAX_RINGS];      /* dropped with an earlier stream */
	uint64_t unsent_sent[ORBIT_MAX_RINGS]; /* of those, reported in this one */
	/* page rings: totals at the stream's start, and as last reported */
	uint32_t page_rings;
	struct page_count {
		uint64_t reserved, records, pages;
	} * page_base, *page_sent;
	uint64_t *page_read;          /* records read from each page ring, ever */
	struct page_count *page_seen; /* loss totals at the last pass */
} T;

/* Configuration problems are said once per process, not at every start. */
static int config_said;

static void tracing_off(void)
{
	atomic_store_explicit(&T.drain->seg->control->capture, 0, memory_order_relaxed);
	atomic_store_explicit(&orbit__capture_flag, 0, memory_order_relaxed);
}

/* ---- configuration ---- */

int orbit__transport_wanted(void)
{
	return getenv("ORBIT_CAPTURE") != NULL || getenv("ORBIT_COLLECTOR") != NULL;
}

static int split_host_port(const char *s)
{
	const char *colon;
	if (s[0] == '[') { /* [v6]:port */
		const char *close = strchr(s, ']');
		if (close == NULL || close[1] != ':')
			return -EINVAL;
		snprintf(T.host, sizeof T.host, "%.*s", (int)(close - s - 1), s + 1);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL || colon == s || (size_t)(colon - s) >= sizeof T.host)
			return -EINVAL;
		snprintf(T.host, sizeof T.host, "%.*s", (int)(colon - s), s);
	}
	char *end;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || port == 0 || port > 65535)
		return -EINVAL;
	snprintf(T.port, sizeof T.port, "%lu", port);
	return 0;
}

/* Reads the environment; problems are said once per process. */
static int configure(void)
{
	const char *file = getenv("ORBIT_CAPTURE"), *coll = getenv("ORBIT_COLLECTOR");
	int say = !config_said;
	T.limit = DEFAULT_SEND_BUFFER;
	const char *sb = getenv("ORBIT_SEND_BUFFER");
	uint64_t v;
	if (sb != NULL &&
	    (orbit__parse_size(sb, &v) != 0 || v < FRAME_TARGET || v > (1ull << 32))) {
		if (say)
			fprintf(stderr,
			        "orbit: ORBIT_SEND_BUFFER=%s is not a size from 1M to 4G; "
			        "using 64M\n",
			        sb);
	} else if (sb != NULL) {
		T.limit = (size_t)v;
	}
	if (file != NULL)
		snprintf(T.target, sizeof T.target, "%s", file);
	if (coll == NULL) {
		T.mode = MODE_FILE;
		return 0;
	}
	snprintf(T.coll, sizeof T.coll, "%s", coll);
	if (split_host_port(coll) != 0) {
		if (say)
			fprintf(stderr,
			        "orbit: ORBIT_COLLECTOR=%s is not HOST:PORT; tracing is off\n",
			        coll);
		return -EINVAL;
	}
	T.mode = MODE_TCP;
	/* Both set: the stream goes to the collector and a copy of its first
	 * stream, the same bytes, into the file. */
	T.tee = file != NULL;
	return 0;
}

static int zstd_level(void)
{
	const char *s = getenv("ORBIT_ZSTD_LEVEL");
	if (s == NULL)
		return DEFAULT_ZSTD_LEVEL;
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v < -7 || v > 19) {
		if (!config_said)
			fprintf(stderr,
			        "orbit: ORBIT_ZSTD_LEVEL=%s is not a level from -7 to 19; "
			        "using %d\n",
			        s, DEFAULT_ZSTD_LEVEL);
		return DEFAULT_ZSTD_LEVEL;
	}
	return (int)v;
}

/* ---- the queue ---- */

static void free_frame(struct qframe *f)
{
	free(f->bytes);
	free(f);
}

static void count_unsent(const struct qframe *f)
{
	for (uint32_t r = 0; r < T.rings; r++)
		T.unsent[r] += f->records[r];
}

static void check_idle(void)
{
	if (T.idle_cb != NULL && orbit__transport_idle()) {
		void (*cb)(void) = T.idle_cb;
		T.idle_cb = NULL;
		cb();
	}
}

static void disconnect(const char *why);

/* The local copy (tee) holds one stream: it ends with the first. */
static void close_local_copy(void)
{
	if (T.fd < 0)
		return;
	fsync(T.fd);
	close(T.fd);
	T.fd = -1;
}

static void on_write(uv_write_t *req, int status)
{
	struct qframe *f = req->data;
	/* Writes complete in the order they were queued. */
	T.head = f->next;
	if (T.head == NULL)
		T.tail = NULL;
	T.queued -= f->len;
	if (status < 0) {
		count_unsent(f);
		if (T.state == STREAMING)
			disconnect(uv_strerror(status));
	}
	free_frame(f);
	check_idle();
}

static int write_file(const uint8_t *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(T.fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Sends the frame just finished in T.fw. */
static void send_frame(void)
{
	if (T.fw.out_len == 0)
		return;
	T.last_frame_ms = uv_now(T.loop);
	if (T.mode == MODE_FILE) {
		int err = write_file(T.fw.out, T.fw.out_len);
		if (err) {
			fprintf(stderr, "orbit: cannot write the capture %s: %s; tracing is off\n",
			        T.target, strerror(-err));
			for (uint32_t r = 0; r < T.rings; r++)
				T.unsent[r] += T.frame_records[r];
			T.state = DEAD;
			tracing_off();
		}
		memset(T.frame_records, 0, sizeof T.frame_records);
		return;
	}
	if (T.tee && T.fd >= 0 && write_file(T.fw.out, T.fw.out_len) != 0) {
		fprintf(stderr, "orbit: cannot write the local copy %s: %s; it stops here\n",
		        T.target, strerror(errno));
		close_local_copy();
	}
	struct qframe *f = calloc(1, sizeof *f);
	uint8_t *bytes = f ? malloc(T.fw.out_len) : NULL;
	if (bytes == NULL) {
		free(f);
		for (uint32_t r = 0; r < T.rings; r++)
			T.unsent[r] += T.frame_records[r];
		memset(T.frame_records, 0, sizeof T.frame_records);
		return;
	}
	memcpy(bytes, T.fw.out, T.fw.out_len);
	f->bytes = bytes;
	f->len = T.fw.out_len;
	memcpy(f->records, T.frame_records, sizeof f->records);
	memset(T.frame_records, 0, sizeof T.frame_records);
	f->req.data = f;
	uv_buf_t buf = uv_buf_init((char *)f->bytes, (unsigned)f->len);
	int err = uv_write(&f->req, (uv_stream_t *)&T.tcp, &buf, 1, on_write);
	if (err) { /* no callback will come: the frame never joined the queue */
		count_unsent(f);
		free_frame(f);
		disconnect(uv_strerror(err));
		return;
	}
	if (T.tail)
		T.tail->next = f;
	else
		T.head = f;
	T.tail = f;
	T.queued += f->len;
}

static void finish_frame(void)
{
	if (orbit__frame_finish(&T.fw) == 0)
		send_frame();
}

static void add_packet(const Orbit__Packet *p)
{
	if (orbit__frame_add(&T.fw, p) != 0)
		return;
	if (T.fw.len >= FRAME_TARGET)
		finish_frame();
}

/* ---- the stream ---- */

static void read_file_line(const char *path, char *buf, size_t len)
{
	buf[0] = '\0';
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return;
	if (fgets(buf, (int)len, f) == NULL)
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void send_handshake(void)
{
	char comm[64], host[256] = "", cmd[4096];
	read_file_line("/proc/self/comm", comm, sizeof comm);
	gethostname(host, sizeof host - 1);
	char *args[64];
	size_t nargs = 0;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, cmd, sizeof cmd - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n > 0) {
		cmd[n] = '\0';
		for (ssize_t i = 0; i < n && nargs < 64; i += (ssize_t)strlen(cmd + i) + 1)
			args[nargs++] = cmd + i;
	}
	Orbit__ClockDescription clock = ORBIT__CLOCK_DESCRIPTION__INIT;
	clock.source = T.clock->source;
	clock.ticks_per_second = orbit__clock_rate(T.clock);
	Orbit__Handshake h = ORBIT__HANDSHAKE__INIT;
	h.protocol_version = ORBIT_PROTOCOL_VERSION;
	h.pid = (uint32_t)getpid();
	h.process_name = comm;
	h.host_name = host;
	h.n_command_line = nargs;
	h.command_line = args;
	h.agent_version = (char *)ORBIT_VERSION;
	h.clock = &clock;
	h.monotonic_ns = clock_ns(CLOCK_MONOTONIC);
	h.realtime_ns = clock_ns(CLOCK_REALTIME);
	h.ring_count = T.rings;
	h.slots_per_ring = T.drain->seg->layout.slots_per_ring;
	h.record_size = ORBIT_RECORD_SIZE;
	const char *token = getenv("ORBIT_TOKEN");
	if (token != NULL) {
		h.token.data = (uint8_t *)token;
		h.token.len = strlen(token);
	}
	h.n_ring_start = T.rings;
	h.ring_start = T.start;
	uint32_t pages, page_size;
	int overwrite;
	orbit__logs_config(&pages, &page_size, &overwrite);
	h.page_ring_count = T.page_rings;
	h.page_size = page_size;
	Orbit__Packet p = ORBIT__PACKET__INIT;
	p.body_case = ORBIT__PACKET__BODY_HANDSHAKE;
	p.handshake = &h;
	orbit__frame_add(&T.fw, &p);
	finish_frame(); /* the handshake is alone in the first frame */
}

static void begin_stream(void)
{
	for (uint32_t r = 0; r < T.rings; r++) {
		const struct orbit__ring_state *s = &T.drain->ring[r];
		T.start[r] = s->next;
		T.base[r] = (struct ring_loss){s->lost_lapped, s->lost_dead, s->lost_backstop};
		T.sent[r] = (struct ring_loss){0, 0, 0};
		T.unsent_sent[r] = 0;
	}
	/* A page ring's stream begins where its reader is: what was read or
	 * lost before belongs to earlier streams; what is still in the ring,
	 * reserved before or after, to this one. */
	/* Losses since the last pass of the previous stream (an outage, say)
	 * are this stream's: nothing read them. */
	for (uint32_t r = 0; r < T.page_rings; r++) {
		struct page_count *b = &T.page_base[r];
		b->records = T.page_seen[r].records;
		b->pages = T.page_seen[r].pages;
		b->reserved = T.page_read[r] + b->records;
		T.page_sent[r] = (struct page_count){0, 0, 0};
	}
	T.state = STREAMING;
	send_handshake();
}

static uint64_t count_records(const uint8_t *page, size_t len)
{
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header h;
	struct orbit__ftrace_record rec;
	uint64_t n = 0;
	if (orbit__ftrace_open(&it, page, len, &h) == 0)
		while (orbit__ftrace_next(&it, &rec) == 1)
			n++;
	return n;
}

/* This stream's counts of page ring r so far. */
static struct page_count page_now(uint32_t r)
{
	struct page_count c;
	orbit__logs_totals(r, &c.reserved, &c.records, &c.pages);
	c.reserved -= T.page_base[r].reserved;
	c.records -= T.page_base[r].records;
	c.pages -= T.page_base[r].pages;
	return c;
}

static void send_page_losses(void)
{
	for (uint32_t r = 0; r < T.page_rings; r++) {
		uint64_t reserved;
		orbit__logs_totals(r, &reserved, &T.page_seen[r].records, &T.page_seen[r].pages);
		struct page_count now = page_now(r);
		if (now.records == T.page_sent[r].records && now.pages == T.page_sent[r].pages)
			continue;
		Orbit__PageLoss l = ORBIT__PAGE_LOSS__INIT;
		l.ring = r;
		l.records = now.records;
		l.pages = now.pages;
		Orbit__Packet p = ORBIT__PACKET__INIT;
		p.body_case = ORBIT__PACKET__BODY_PAGE_LOSS;
		p.page_loss = &l;
		add_packet(&p);
		T.page_sent[r] = now;
	}
}

/* Loss packets for the rings whose counts changed (at_end: the last ones). */
static void send_losses(int at_end)
{
	for (uint32_t r = 0; r < T.rings; r++) {
		const struct orbit__ring_state *s = &T.drain->ring[r];
		struct ring_loss now = {s->lost_lapped - T.base[r].lapped,
		                        s->lost_dead - T.base[r].gone,
		                        s->lost_backstop - T.base[r].backstop};
		uint64_t pending = at_end && s->end > s->next ? s->end - s->next : 0;
		if (!at_end && memcmp(&now, &T.sent[r], sizeof now) == 0 &&
		    T.unsent[r] == T.unsent_sent[r])
			continue;
		if (at_end && pending == 0 && now.lapped + now.gone + now.backstop == 0 &&
		    T.unsent[r] == 0)
			continue;
		Orbit__Loss l = ORBIT__LOSS__INIT;
		l.ring = r;
		l.lapped = now.lapped;
		l.writer_gone = now.gone;
		l.backstop = now.backstop;
		l.unsent = T.unsent[r];
		l.at_end = pending;
		Orbit__Packet p = ORBIT__PACKET__INIT;
		p.body_case = ORBIT__PACKET__BODY_LOSS;
		p.loss = &l;
		add_packet(&p);
		T.sent[r] = now;
		T.unsent_sent[r] = T.unsent[r];
	}
}

static void send_keepalive(void)
{
	const struct orbit__ring_state *s = &T.drain->ring[0];
	Orbit__Loss l = ORBIT__LOSS__INIT;
	l.lapped = s->lost_lapped - T.base[0].lapped;
	l.writer_gone = s->lost_dead - T.base[0].gone;
	l.backstop = s->lost_backstop - T.base[0].backstop;
	l.unsent = T.unsent[0];
	Orbit__Packet p = ORBIT__PACKET__INIT;
	p.body_case = ORBIT__PACKET__BODY_LOSS;
	p.loss = &l;
	add_packet(&p);
}

static void send_thread_names(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char path[300], name[64];
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		read_file_line(path, name, sizeof name);
		Orbit__ThreadName t = ORBIT__THREAD_NAME__INIT;
		t.tid = (uint32_t)strtoul(e->d_name, NULL, 10);
		t.name = name;
		Orbit__Packet p = ORBIT__PACKET__INIT;
		p.body_case = ORBIT__PACKET__BODY_THREAD_NAME;
		p.thread_name = &t;
		add_packet(&p);
	}
	if (d != NULL)
		closedir(d);
}

/* ---- TCP ---- */

static void schedule_retry(void);

static void on_tcp_closed(uv_handle_t *h)
{
	(void)h;
	T.tcp_open = 0;
	if (T.state == CLOSING) {
		T.state = IDLE;
		schedule_retry();
	}
	check_idle();
}

static void close_tcp(void)
{
	if (T.tcp_open && !uv_is_closing((uv_handle_t *)&T.tcp))
		uv_close((uv_handle_t *)&T.tcp, on_tcp_closed);
}

static void disconnect(const char *why)
{
	if (T.state != STREAMING)
		return;
	T.state = CLOSING;
	close_local_copy();
	if (!T.told) {
		fprintf(stderr, "orbit: connection to collector %s lost (%s); reconnecting\n",
		        T.coll, why);
		T.told = 1;
	}
	close_tcp();
}

static void reject(void)
{
	T.reply[T.reply_len < REPLY_MAX ? T.reply_len : REPLY_MAX - 1] = '\0';
	T.reply[strcspn(T.reply, "\n")] = '\0';
	fprintf(stderr, "orbit: collector %s refused this process (%s); tracing is off\n", T.coll,
	        T.reply + strlen(REJECTED) + (T.reply[strlen(REJECTED)] == ':' ? 2 : 0));
	T.state = DEAD;
	tracing_off();
	close_tcp();
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	(void)suggested;
	static char scratch[REPLY_MAX];
	*buf = uv_buf_init(scratch, sizeof scratch);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	(void)s;
	if (n > 0) { /* the collector only ever speaks to refuse */
		size_t take = (size_t)n < REPLY_MAX - 1 - T.reply_len ? (size_t)n
		                                                      : REPLY_MAX - 1 - T.reply_len;
		memcpy(T.reply + T.reply_len, buf->base, take);
		T.reply_len += take;
		if (memchr(T.reply, '\n', T.reply_len) != NULL &&
		    strncmp(T.reply, REJECTED, strlen(REJECTED)) == 0)
			reject();
		return;
	}
	if (n < 0) {
		if (T.reply_len > 0 && strncmp(T.reply, REJECTED, strlen(REJECTED)) == 0)
			reject();
		else
			disconnect(n == UV_EOF ? "closed by the collector" : uv_strerror((int)n));
	}
}

static void connect_failed(const char *why)
{
	if (!T.told) {
		fprintf(stderr,
		        "orbit: cannot reach collector %s (%s); retrying in the "
		        "background\n",
		        T.coll, why);
		T.told = 1;
	}
	T.state = CLOSING;
	if (T.tcp_open)
		close_tcp();
	else
		on_tcp_closed(NULL);
}

static int open_capture(void);

static void on_connect(uv_connect_t *req, int status)
{
	(void)req;
	if (T.state == DEAD)
		return;
	if (status < 0) {
		connect_failed(uv_strerror(status));
		return;
	}
	T.backoff_ms = BACKOFF_MIN_MS;
	T.told = 0;
	T.reply_len = 0;
	uv_tcp_nodelay(&T.tcp, 1);
	uv_read_start((uv_stream_t *)&T.tcp, on_alloc, on_read);
	if (T.tee && !T.tee_opened) { /* the first stream only */
		T.tee_opened = 1;
		open_capture();
	}
	begin_stream();
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	(void)req;
	if (T.state == DEAD) {
		uv_freeaddrinfo(res);
		return;
	}
	if (status < 0) {
		connect_failed(uv_strerror(status));
		return;
	}
	uv_tcp_init(T.loop, &T.tcp);
	T.tcp_open = 1;
	T.state = CONNECTING;
	int err = uv_tcp_connect(&T.conn, &T.tcp, res->ai_addr, on_connect);
	uv_freeaddrinfo(res);
	if (err)
		connect_failed(uv_strerror(err));
}

static void start_connect(void)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	T.state = RESOLVING;
	int err = uv_getaddrinfo(T.loop, &T.gai, on_resolved, T.host, T.port, &hints);
	if (err)
		connect_failed(uv_strerror(err));
}

static void on_retry(uv_timer_t *t)
{
	(void)t;
	if (T.state == IDLE)
		start_connect();
}

static void schedule_retry(void)
{
	if (T.state != IDLE || !T.retry_open)
		return;
	uv_timer_start(&T.retry, on_retry, T.backoff_ms, 0);
	T.backoff_ms = T.backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : T.backoff_ms * 2;
}

/* ---- the capture file ---- */

static int open_locked(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	if (ftruncate(fd, 0) != 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* ORBIT_CAPTURE names the file; "%p" in it stands for the pid. A file that
 * another live agent is writing (a child that inherited the variable, say)
 * is never truncated: this process writes PATH.PID instead, and says so. */
static int open_capture(void)
{
	char path[PATH_MAX], alt[PATH_MAX];
	char *p = strstr(T.target, "%p");
	int n = p != NULL ? snprintf(path, sizeof path, "%.*s%d%s", (int)(p - T.target), T.target,
	                             (int)getpid(), p + 2)
	                  : snprintf(path, sizeof path, "%s", T.target);
	int fd = n < 0 || (size_t)n >= sizeof path ? -ENAMETOOLONG : open_locked(path);
	if (fd == -EWOULDBLOCK) {
		n = snprintf(alt, sizeof alt, "%s.%d", path, (int)getpid());
		if (n < 0 || (size_t)n >= sizeof alt) {
			fd = -ENAMETOOLONG;
		} else {
			fprintf(stderr,
			        "orbit: the capture %s is being written by another "
			        "process; writing %s\n",
			        path, alt);
			memcpy(path, alt, (size_t)n + 1);
			fd = open_locked(path);
		}
	}
	if (fd < 0) {
		fprintf(stderr, "orbit: cannot create the capture %s: %s; %s\n", path,
		        strerror(-fd), T.mode == MODE_TCP ? "no local copy" : "tracing is off");
		return fd;
	}
	T.fd = fd;
	memcpy(T.target, path, strlen(path) + 1);
	return 0;
}

/* ---- the interface ---- */

void orbit__transport_forget(void)
{
	/* In a forked child: the parent's socket and capture file are not
	 * ours; close our copies (the file's lock stays the parent's). */
	if (T.tcp_open) {
		uv_os_fd_t fd;
		if (uv_fileno((uv_handle_t *)&T.tcp, &fd) == 0)
			close(fd);
	}
	if (T.fd >= 0)
		close(T.fd);
	memset(&T, 0, sizeof T);
	T.fd = -1;
}

int orbit__transport_start(uv_loop_t *loop, struct orbit__drain *drain,
                           struct orbit__clock_conv *clock)
{
	memset(&T, 0, sizeof T);
	T.loop = loop;
	T.drain = drain;
	T.clock = clock;
	T.rings = drain->seg->layout.ring_count;
	T.fd = -1;
	T.page_rings = orbit__logs_ring_count();
	T.page_base = calloc(T.page_rings + 1, sizeof *T.page_base);
	T.page_sent = calloc(T.page_rings + 1, sizeof *T.page_sent);
	T.page_read = calloc(T.page_rings + 1, sizeof *T.page_read);
	T.page_seen = calloc(T.page_rings + 1, sizeof *T.page_seen);
	if (T.page_base == NULL || T.page_sent == NULL || T.page_read == NULL ||
	    T.page_seen == NULL) {
		free(T.page_base);
		free(T.page_sent);
		free(T.page_read);
		free(T.page_seen);
		return -ENOMEM;
	}
	int err = configure();
	if (err)
		return err;
	int level = zstd_level();
	config_said = 1;
	err = orbit__frame_writer_init(&T.fw, level);
	if (err)
		return err;
	if (T.mode == MODE_FILE) {
		err = open_capture();
		if (err)
			return err;
		begin_stream();
		return 0;
	}
	uv_timer_init(loop, &T.retry);
	T.retry_open = 1;
	T.backoff_ms = BACKOFF_MIN_MS;
	start_connect();
	return 0;
}

int orbit__transport_ready(int final)
{
	return T.state == STREAMING && (final || T.queued < T.limit);
}

void orbit__transport_records(uint32_t ring, uint64_t first, const uint8_t *records, uint32_t n)
{
	if (T.state != STREAMING)
		return;
	while (n > 0) {
		uint32_t k = n < ORBIT_BATCH_MAX ? n : ORBIT_BATCH_MAX;
		/* Encoded straight into the frame: no protobuf-c copy. */
		size_t len = orbit__batch_packet_size(ring, first, k);
		uint8_t *p = orbit__frame_append(&T.fw, len);
		if (p == NULL) {
			T.unsent[ring] += n;
			return;
		}
		orbit__batch_packet_write(p, ring, first, records, k);
		T.frame_records[ring] += k;
		if (T.fw.len >= FRAME_TARGET)
			finish_frame();
		records += (size_t)k * ORBIT_RECORD_SIZE;
		first += k;
		n -= k;
	}
}

void orbit__transport_page(uint32_t ring, const uint8_t *page, size_t len)
{
	if (ring < T.page_rings)
		T.page_read[ring] += count_records(page, len);
	if (T.state != STREAMING)
		return;
	Orbit__FtracePage f = ORBIT__FTRACE_PAGE__INIT;
	f.ring = ring;
	f.page.data = (uint8_t *)page;
	f.page.len = len;
	Orbit__Packet p = ORBIT__PACKET__INIT;
	p.body_case = ORBIT__PACKET__BODY_FTRACE_PAGE;
	p.ftrace_page = &f;
	add_packet(&p);
}

void orbit__transport_pass_done(void)
{
	if (T.state != STREAMING)
		return;
	send_losses(0);
	send_page_losses();
	/* A quiet process still says it is there, before the collector's idle
	 * timeout: its loss so far, which changes nothing for a reader. */
	uint64_t now = uv_now(T.loop);
	if (T.fw.len == 0 && now - T.last_frame_ms >= KEEPALIVE_MS)
		send_keepalive();
	finish_frame();
}

void orbit__transport_end(void)
{
	if (T.state != STREAMING)
		return;
	send_thread_names();
	send_losses(1);
	send_page_losses();
	uint64_t claimed[ORBIT_MAX_RINGS];
	for (uint32_t r = 0; r < T.rings; r++)
		claimed[r] = T.drain->ring[r].end - T.start[r];
	uint64_t *reserved = calloc(T.page_rings ? T.page_rings : 1, sizeof *reserved);
	for (uint32_t r = 0; reserved != NULL && r < T.page_rings; r++)
		reserved[r] = page_now(r).reserved;
	Orbit__EndOfStream e = ORBIT__END_OF_STREAM__INIT;
	e.n_claimed_per_ring = T.rings;
	e.claimed_per_ring = claimed;
	e.n_reserved_per_page_ring = reserved != NULL ? T.page_rings : 0;
	e.reserved_per_page_ring = reserved;
	Orbit__Packet p = ORBIT__PACKET__INIT;
	p.body_case = ORBIT__PACKET__BODY_END;
	p.end = &e;
	add_packet(&p);
	free(reserved);
	finish_frame();
}

int orbit__transport_idle(void)
{
	/* Off a stream, queued frames are being cancelled: nothing more will
	 * be written. */
	return T.head == NULL || T.state != STREAMING;
}

void orbit__transport_on_idle(void (*done)(void))
{
	T.idle_cb = done;
	check_idle();
}

void orbit__transport_close(void)
{
	close_local_copy();
	if (T.state == RESOLVING)
		uv_cancel((uv_req_t *)&T.gai);
	T.state = DEAD;
	if (T.retry_open) {
		uv_close((uv_handle_t *)&T.retry, NULL);
		T.retry_open = 0;
	}
	close_tcp();
	orbit__frame_writer_free(&T.fw);
	free(T.page_base);
	free(T.page_sent);
	free(T.page_read);
	free(T.page_seen);
	T.page_base = T.page_sent = T.page_seen = NULL;
	T.page_read = NULL;
}
