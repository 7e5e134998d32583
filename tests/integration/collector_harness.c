/* collector_harness.c — see collector_harness.h. */
#include "collector_harness.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

uint64_t harness_now_ms(void)
{
	return test_now_ns(CLOCK_MONOTONIC) / 1000000;
}

void harness_random(uint8_t *p, size_t n, uint64_t *seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(test_rand(seed) >> 24);
}

/* ---- the collector process ---- */

void harness_root(struct coll *h)
{
	memset(h, 0, sizeof *h);
	h->pid = -1;
	h->stderr_fd = -1;
	test_tmpdir(h->root, sizeof h->root, "collector-test");
	snprintf(h->dir, sizeof h->dir, "%s/captures", h->root);
	snprintf(h->log, sizeof h->log, "%s/collector.log", h->root);
}

static void child_exec(struct coll *h, int out, const char *exe, const char *listen,
                       const char *const *args)
{
	const char *argv[64];
	int n = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a failed test */
	dup2(out, STDOUT_FILENO);
	int err =
	    h->stderr_fd >= 0 ? h->stderr_fd : open(h->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
	dup2(err, STDERR_FILENO);
	if (h->fsize_limit > 0) {
		struct rlimit r = {(rlim_t)h->fsize_limit, (rlim_t)h->fsize_limit};
		setrlimit(RLIMIT_FSIZE, &r);
	}
	argv[n++] = exe;
	argv[n++] = "--listen";
	argv[n++] = listen ? listen : "127.0.0.1:0";
	argv[n++] = "--dir";
	argv[n++] = h->dir;
	for (int i = 0; args != NULL && args[i] != NULL && n < 62; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	execv(exe, (char *const *)argv);
	fprintf(stderr, "exec %s: %s\n", exe, strerror(errno));
	_exit(127);
}

/* Reads the first stdout line, "listening on HOST:PORT". */
static void read_listening(struct coll *h, int fd)
{
	char line[256];
	size_t n = 0;
	uint64_t deadline = harness_now_ms() + HARNESS_WAIT_MS;

	while (n < sizeof line - 1 && (n == 0 || line[n - 1] != '\n')) {
		struct pollfd p = {fd, POLLIN, 0};
		int64_t left = (int64_t)(deadline - harness_now_ms());
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		ssize_t r = read(fd, line + n, 1);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	line[n] = '\0';
	if (strncmp(line, "listening on ", 13) != 0 || line[n - 1] != '\n') {
		fprintf(stderr, "collector did not print 'listening on': '%s'\n", line);
		coll_dump_log(h);
		exit(1);
	}
	line[n - 1] = '\0';
	snprintf(h->listen, sizeof h->listen, "%s", line + 13);
	const char *colon = strrchr(h->listen, ':');
	CHECK(colon != NULL);
	h->port = atoi(colon + 1);
	CHECK(h->port > 0 && h->port < 65536);
}

void coll_start(struct coll *h, const char *exe, const char *listen, const char *const *args)
{
	int p[2];

	signal(SIGPIPE, SIG_IGN);
	CHECK(pipe(p) == 0);
	fflush(stdout);
	fflush(stderr);
	h->pid = fork();
	CHECK(h->pid >= 0);
	if (h->pid == 0) {
		close(p[0]);
		child_exec(h, p[1], exe, listen, args);
	}
	close(p[1]);
	read_listening(h, p[0]);
	close(p[0]); /* the collector writes nothing more on stdout */
	fprintf(stderr, "collector %d listening on %s, captures in %s\n", (int)h->pid, h->listen,
	        h->dir);
}

int coll_alive(const struct coll *h)
{
	int status;

	return h->pid > 0 && waitpid(h->pid, &status, WNOHANG) == 0;
}

int coll_stop(struct coll *h, int sig)
{
	CHECK(h->pid > 0);
	kill(h->pid, sig);
	return coll_wait(h, sig);
}

int coll_wait(struct coll *h, int sig)
{
	int status;
	uint64_t deadline = harness_now_ms() + HARNESS_WAIT_MS;

	CHECK(h->pid > 0);
	for (;;) {
		pid_t r = waitpid(h->pid, &status, WNOHANG);
		if (r == h->pid)
			break;
		CHECK(r == 0);
		if (harness_now_ms() > deadline) {
			fprintf(stderr, "collector did not exit after signal %d\n", sig);
			kill(h->pid, SIGKILL);
			waitpid(h->pid, &status, 0);
			coll_dump_log(h);
			exit(1);
		}
		usleep(5000); /* polling for exit: waitpid has no timeout */
	}
	h->pid = -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

long coll_rss_kib(const struct coll *h, const char *field)
{
	char path[64], line[256];
	long kib = -1;
	size_t flen = strlen(field);

	snprintf(path, sizeof path, "/proc/%d/status", (int)h->pid);
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, field, flen) == 0 && line[flen] == ':')
			kib = atol(line + flen + 1);
	fclose(f);
	return kib;
}

void coll_check_rss(const struct coll *h, const char *when)
{
	/* ASan keeps freed memory in quarantine and shadow memory on top. */
	const long limit = (HARNESS_ASAN ? 700L : 200L) * 1024;
	long rss = coll_rss_kib(h, "VmRSS"), hwm = coll_rss_kib(h, "VmHWM");

	fprintf(stderr, "collector memory %s: VmRSS %ld KiB, VmHWM %ld KiB (limit %ld KiB)\n", when,
	        rss, hwm, limit);
	CHECK(rss > 0 && rss < limit);
	CHECK(hwm > 0 && hwm < limit);
}

/* The file's bytes; none when it is not there (yet). */
static char *read_all(const char *path, size_t *len)
{
	if (access(path, F_OK) == 0)
		return test_read_file(path, len);
	char *b = calloc(1, 1);
	CHECK(b != NULL);
	*len = 0;
	return b;
}

int coll_log_count(const struct coll *h, const char *needle)
{
	size_t len;
	char *log = read_all(h->log, &len);
	int count = 0;

	for (const char *p = log; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		count++;
	free(log);
	return count;
}

int coll_wait_log(const struct coll *h, const char *needle, int timeout_ms)
{
	uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		if (coll_log_count(h, needle) > 0)
			return 1;
		if (harness_now_ms() > deadline)
			return 0;
		usleep(2000); /* the log file has no readiness signal but its content */
	}
}

void coll_expect_log(const struct coll *h, const char *needle)
{
	if (!coll_wait_log(h, needle, HARNESS_WAIT_MS)) {
		fprintf(stderr, "expected in the collector's log: '%s'\n", needle);
		coll_dump_log(h);
		exit(1);
	}
}

void coll_dump_log(const struct coll *h)
{
	size_t len;
	char *log = read_all(h->log, &len);

	fprintf(stderr, "---- collector log (%s) ----\n%s---- end of log ----\n", h->log,
	        len > 20000 ? log + len - 20000 : log);
	free(log);
}

void coll_cleanup(struct coll *h)
{
	if (h->pid > 0) {
		kill(h->pid, SIGKILL);
		waitpid(h->pid, NULL, 0);
		h->pid = -1;
	}
	test_rm_tree(h->root);
}

/* ---- clients ---- */

int client_connect_from(const struct coll *h, const char *local)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char host[96];

	memset(&ss, 0, sizeof ss);
	if (h->listen[0] == '[') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		snprintf(host, sizeof host, "%.*s", (int)(strchr(h->listen, ']') - h->listen - 1),
		         h->listen + 1);
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)h->port);
		CHECK(inet_pton(AF_INET6, host, &a->sin6_addr) == 1);
		len = sizeof *a;
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		snprintf(host, sizeof host, "%.*s", (int)(strrchr(h->listen, ':') - h->listen),
		         h->listen);
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)h->port);
		CHECK(inet_pton(AF_INET, host, &a->sin_addr) == 1);
		len = sizeof *a;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0);
	if (local != NULL) {
		struct sockaddr_in a = {.sin_family = AF_INET};
		CHECK(ss.ss_family == AF_INET && inet_pton(AF_INET, local, &a.sin_addr) == 1);
		if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
			close(fd);
			return -1;
		}
	}
	if (connect(fd, (struct sockaddr *)&ss, len) != 0) {
		fprintf(stderr, "connect to %s: %s\n", h->listen, strerror(errno));
		exit(1);
	}
	return fd;
}

int client_connect(const struct coll *h)
{
	return client_connect_from(h, NULL);
}

int harness_second_address(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};

	CHECK(fd >= 0);
	inet_pton(AF_INET, "127.0.0.2", &a.sin_addr);
	int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
	close(fd);
	return ok;
}

int harness_files(int want)
{
	struct rlimit r;

	CHECK(getrlimit(RLIMIT_NOFILE, &r) == 0);
	if (r.rlim_cur < (rlim_t)want + 64) {
		r.rlim_cur = r.rlim_max < (rlim_t)want + 64 ? r.rlim_max : (rlim_t)want + 64;
		setrlimit(RLIMIT_NOFILE, &r);
		CHECK(getrlimit(RLIMIT_NOFILE, &r) == 0);
	}
	return (int)r.rlim_cur - 64 < want ? (int)r.rlim_cur - 64 : want;
}

int client_local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;

	CHECK(getsockname(fd, (struct sockaddr *)&ss, &len) == 0);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

int send_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n > 0) {
		ssize_t r = send(fd, b, n, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

int wait_closed(int fd, int timeout_ms)
{
	uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;
	static const char prefix[] = "orbit-collector: rejected: ";
	char got[512];
	size_t len = 0;

	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		int64_t left = (int64_t)(deadline - harness_now_ms());
		if (left <= 0)
			return 0;
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		ssize_t r = recv(fd, got + len, sizeof got - 1 - len, 0);
		if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
			if (len == 0)
				return 1;
			/* The only bytes a collector sends: one refusal line. */
			got[len] = '\0';
			CHECK(strncmp(got, prefix, sizeof prefix - 1) == 0);
			CHECK(strchr(got, '\n') == got + len - 1);
			return 2;
		}
		if (r > 0) {
			len += (size_t)r;
			CHECK(len < sizeof got - 1);
		}
	}
}

/* ---- streams ---- */

/* The writer's sink: a frame is recorded as good, and sent when connected. */
static int stream_frame(void *ctx, const struct orbit__sw_frame *f)
{
	struct stream *s = ctx;

	if (s->len + f->len > s->cap) {
		s->cap = (s->len + f->len) * 2;
		s->bytes = realloc(s->bytes, s->cap);
		CHECK(s->bytes != NULL);
	}
	memcpy(s->bytes + s->len, f->bytes, f->len);
	s->len += f->len;
	s->frame_end = realloc(s->frame_end, (s->frames + 1) * sizeof *s->frame_end);
	s->frame_packets = realloc(s->frame_packets, (s->frames + 1) * sizeof *s->frame_packets);
	CHECK(s->frame_end != NULL && s->frame_packets != NULL);
	s->frame_end[s->frames] = s->len;
	s->frame_packets[s->frames++] = s->packets;
	s->pending = 0;
	if (s->fd >= 0) {
		int err = send_all(s->fd, f->bytes, f->len);
		if (err) {
			fprintf(stderr, "%s: send: %s\n", s->name, strerror(-err));
			exit(1);
		}
	}
	return 0;
}

void stream_init(struct stream *s, const char *name, uint32_t pid)
{
	const struct orbit__sw_sink sink = {.ctx = s, .frame = stream_frame};

	memset(s, 0, sizeof *s);
	s->fd = -1;
	snprintf(s->name, sizeof s->name, "%s", name);
	s->pid = pid;
	s->w = orbit__sw_new(1, ORBIT_SW_NO_CUT, &sink);
	CHECK(s->w != NULL);
}

void stream_open(struct stream *s, const struct coll *h, const char *name, uint32_t pid)
{
	stream_init(s, name, pid);
	s->fd = client_connect(h);
	s->local_port = client_local_port(s->fd);
}

void stream_add(struct stream *s, const Orbit__Packet *p)
{
	size_t n = orbit__packet__get_packed_size(p);

	CHECK(orbit__sw_packet(s->w, p) == 0);
	s->packet = realloc(s->packet, (s->packets + 1) * sizeof *s->packet);
	s->packet_len = realloc(s->packet_len, (s->packets + 1) * sizeof *s->packet_len);
	CHECK(s->packet != NULL && s->packet_len != NULL);
	s->packet[s->packets] = malloc(n ? n : 1);
	CHECK(s->packet[s->packets] != NULL);
	CHECK(orbit__packet__pack(p, s->packet[s->packets]) == n);
	s->packet_len[s->packets++] = n;
	s->pending++;
}

void stream_flush(struct stream *s)
{
	size_t frames = s->frames;

	CHECK(orbit__sw_cut(s->w) == 0);
	CHECK(s->frames == frames + 1); /* a frame went out: it held something */
}

void stream_handshake(struct stream *s, uint32_t version, const char *token)
{
	Orbit__Handshake hs = ORBIT__HANDSHAKE__INIT;
	Orbit__ClockDescription clock = ORBIT__CLOCK_DESCRIPTION__INIT;
	Orbit__Packet p = ORBIT__PACKET__INIT;
	uint64_t starts[2] = {0, 0};
	char *cmd[2] = {s->name, "--test"};

	hs.protocol_version = version;
	hs.pid = s->pid;
	hs.process_name = s->name;
	hs.host_name = "testhost";
	hs.n_command_line = 2;
	hs.command_line = cmd;
	hs.agent_version = "test";
	hs.clock = &clock;
	hs.realtime_ns = 1700000000000000000ull;
	hs.monotonic_ns = 1000;
	hs.ring_count = 2;
	hs.slots_per_ring = 8192;
	hs.record_size = ORBIT_RECORD_SIZE;
	hs.n_ring_start = 2;
	hs.ring_start = starts;
	if (token != NULL) {
		hs.token.data = (uint8_t *)token;
		hs.token.len = strlen(token);
	}
	hs.acknowledgements = s->acks ? 1 : 0;
	p.body_case = ORBIT__PACKET__BODY_HANDSHAKE;
	p.handshake = &hs;
	stream_add(s, &p);
}

void stream_add_batch(struct stream *s, uint32_t ring, uint64_t first, uint32_t n)
{
	uint8_t *rec = calloc(n, ORBIT_RECORD_SIZE), *enc = malloc(ORBIT_BATCH_COMPACT_BOUND(n));
	Orbit__RingBatch b = ORBIT__RING_BATCH__INIT;
	Orbit__Packet p = ORBIT__PACKET__INIT;

	CHECK(rec != NULL && enc != NULL);
	for (uint32_t i = 0; i < n; i++) {
		struct orbit_record r = {.time = 1000 + (first + i) * 37,
		                         .id = first + i,
		                         .tid = 100 + ring,
		                         .kind = (i & 1) ? 2 : 1,
		                         .len = 4};
		memcpy(r.name, "scop", 4);
		orbit__record_encode(&r, rec + (size_t)i * ORBIT_RECORD_SIZE);
	}
	size_t len = orbit__batch_encode(rec, n, enc);
	b.ring = ring;
	b.first_claim = first;
	b.count = n;
	b.encoding = ORBIT_BATCH_COMPACT;
	b.records.data = enc;
	b.records.len = len;
	p.body_case = ORBIT__PACKET__BODY_RING_BATCH;
	p.ring_batch = &b;
	stream_add(s, &p);
	free(rec);
	free(enc);
}

void stream_add_thread(struct stream *s, uint32_t tid, const char *name)
{
	Orbit__ThreadName t = ORBIT__THREAD_NAME__INIT;
	Orbit__Packet p = ORBIT__PACKET__INIT;

	t.tid = tid;
	t.name = (char *)name;
	p.body_case = ORBIT__PACKET__BODY_THREAD_NAME;
	p.thread_name = &t;
	stream_add(s, &p);
}

void stream_add_loss(struct stream *s, uint32_t ring, uint64_t lapped)
{
	Orbit__Loss l = ORBIT__LOSS__INIT;
	Orbit__Packet p = ORBIT__PACKET__INIT;

	l.ring = ring;
	l.lapped = lapped;
	p.body_case = ORBIT__PACKET__BODY_LOSS;
	p.loss = &l;
	stream_add(s, &p);
}

void stream_add_end(struct stream *s)
{
	Orbit__EndOfStream e = ORBIT__END_OF_STREAM__INIT;
	Orbit__Packet p = ORBIT__PACKET__INIT;
	uint64_t claimed[2] = {0, 0};

	e.n_claimed_per_ring = 2;
	e.claimed_per_ring = claimed;
	p.body_case = ORBIT__PACKET__BODY_END;
	p.end = &e;
	stream_add(s, &p);
}

void stream_add_page(struct stream *s, size_t len, int random)
{
	Orbit__FtracePage f = ORBIT__FTRACE_PAGE__INIT;
	Orbit__Packet p = ORBIT__PACKET__INIT;
	uint8_t *page = calloc(1, len);
	uint64_t seed = 0x9e3779b97f4a7c15ull ^ (s->packets * 7919u) ^ s->pid;

	CHECK(page != NULL);
	if (random)
		harness_random(page, len, &seed);
	f.ring = 0;
	f.page.data = page;
	f.page.len = len;
	p.body_case = ORBIT__PACKET__BODY_FTRACE_PAGE;
	p.ftrace_page = &f;
	stream_add(s, &p);
	free(page);
}

void stream_good_frames(struct stream *s, int frames)
{
	for (int i = 0; i < frames; i++) {
		uint64_t first = (uint64_t)s->frames * 100;
		stream_add_batch(s, 0, first, 100);
		stream_add_batch(s, 1, first, 50);
		if (i % 3 == 0)
			stream_add_thread(s, 100 + (uint32_t)i, "worker");
		if (i % 4 == 1)
			stream_add_page(s, 4096, 0);
		if (i % 5 == 2)
			stream_add_loss(s, 0, 0);
		stream_flush(s);
	}
}

void stream_close_wait(struct stream *s, const struct coll *h)
{
	char needle[64];

	CHECK(s->fd >= 0);
	close(s->fd);
	s->fd = -1;
	snprintf(needle, sizeof needle, ":%d: disconnected", s->local_port);
	coll_expect_log(h, needle);
}

void stream_free(struct stream *s)
{
	if (s->fd >= 0)
		close(s->fd);
	orbit__sw_free(s->w);
	for (size_t i = 0; i < s->packets; i++)
		free(s->packet[i]);
	free(s->packet);
	free(s->packet_len);
	free(s->bytes);
	free(s->frame_end);
	free(s->frame_packets);
	memset(s, 0, sizeof *s);
	s->fd = -1;
}

/* ---- capture files ---- */

int capture_find(const struct coll *h, const char *name, uint32_t pid, char *path, size_t n)
{
	char prefix[160];
	int found = 0;
	DIR *d = opendir(h->dir);
	struct dirent *e;

	snprintf(prefix, sizeof prefix, "%s-%u-", name, pid);
	path[0] = '\0';
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
			continue;
		snprintf(path, n, "%s/%s", h->dir, e->d_name);
		found++;
	}
	if (d != NULL)
		closedir(d);
	return found;
}

int capture_count(const struct coll *h)
{
	int count = 0;
	DIR *d = opendir(h->dir);
	struct dirent *e;

	while (d != NULL && (e = readdir(d)) != NULL)
		count += e->d_name[0] != '.';
	if (d != NULL)
		closedir(d);
	return count;
}

int zstd_test(const char *path)
{
	char cmd[512];

	if (system("command -v zstd >/dev/null 2>&1") != 0) {
		fprintf(stderr, "zstd not installed: 'zstd -t' check skipped\n");
		return 77;
	}
	snprintf(cmd, sizeof cmd, "zstd -q -t '%s'", path);
	return system(cmd) == 0 ? 0 : 1;
}

static void packets_verify(const char *path, const struct stream *s, size_t frames)
{
	int err = 0;
	struct orbit_capture_reader *r = orbit__capture_open(path, &err);
	size_t want = frames ? s->frame_packets[frames - 1] : 0, got = 0;
	Orbit__Packet *p;
	struct orbit_capture_problem problem;

	CHECK(r != NULL);
	while ((err = orbit__capture_next(r, &p, &problem)) == 1) {
		size_t n = orbit__packet__get_packed_size(p);
		uint8_t *b = malloc(n ? n : 1);
		CHECK(b != NULL && got < want);
		orbit__packet__pack(p, b);
		CHECK_EQ_U64(n, s->packet_len[got]);
		CHECK(memcmp(b, s->packet[got], n) == 0);
		CHECK(orbit__packet_validate(p) == 0);
		free(b);
		orbit__packet__free_unpacked(p, NULL);
		got++;
	}
	CHECK_EQ_U64(err, 0);
	CHECK_EQ_U64(got, want);
	orbit__capture_close(r);
}

void capture_verify(const char *path, const struct stream *s, size_t frames)
{
	size_t len, want = frames ? s->frame_end[frames - 1] : 0;
	char *data = read_all(path, &len);

	if (len != want)
		fprintf(stderr, "%s: %zu bytes, expected %zu (%zu frames)\n", path, len, want,
		        frames);
	CHECK_EQ_U64(len, want);
	CHECK(memcmp(data, s->bytes, len) == 0);
	free(data);
	CHECK(zstd_test(path) != 1);
	packets_verify(path, s, frames);
}

void capture_verify_stream(const struct coll *h, const struct stream *s)
{
	char path[512];

	CHECK_EQ_U64(capture_find(h, s->name, s->pid, path, sizeof path), 1);
	capture_verify(path, s, s->frames);
}

/* ---- acknowledgements ---- */

/* Decodes the whole Ack frame of flen bytes at the front of a->buf. */
static void ack_take(struct ack_reader *a, size_t flen)
{
	size_t off = 0, plen;
	const uint8_t *bytes;
	int packets = 0;
	Orbit__Packet *p = NULL;

	CHECK(flen <= ORBIT_ACK_FRAME_MAX);
	CHECK(orbit__frame_decompress(&a->scratch, a->buf, flen) == 0);
	while (orbit__frame_next_packet(&a->scratch, &off, &bytes, &plen)) {
		packets++;
		if (p != NULL)
			orbit__packet__free_unpacked(p, NULL);
		p = orbit__packet__unpack(NULL, plen, bytes);
	}
	CHECK(packets == 1 && p != NULL && p->body_case == ORBIT__PACKET__BODY_ACK);
	CHECK(orbit__packet_validate(p) == 0);
	const Orbit__Ack *k = p->ack;
	/* Nothing after the last; never less than before; never the same. */
	CHECK(a->end == ORBIT_ACK_GOES_ON);
	CHECK(k->frames >= a->frames && k->bytes >= a->bytes && k->synced_frames >= a->synced);
	CHECK(k->synced_frames <= k->frames);
	CHECK(k->end != ORBIT_ACK_GOES_ON || a->count == 0 || k->frames != a->frames ||
	      k->synced_frames != a->synced);
	a->frames = k->frames;
	a->bytes = k->bytes;
	a->synced = k->synced_frames;
	a->end = k->end;
	a->count++;
	orbit__packet__free_unpacked(p, NULL);
	memmove(a->buf, a->buf + flen, a->len - flen);
	a->len -= flen;
}

int ack_next(int fd, struct ack_reader *a, int timeout_ms)
{
	uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		size_t flen;
		if (a->len > 0) {
			int r = orbit__frame_size(a->buf, a->len, &flen);
			CHECK(r >= 0); /* nothing but frames */
			if (r == 0) {
				ack_take(a, flen);
				return 1;
			}
		}
		if (a->closed) {
			CHECK_EQ_U64(a->len, 0); /* no torn Ack */
			return -1;
		}
		int64_t left = (int64_t)(deadline - harness_now_ms());
		struct pollfd pf = {fd, POLLIN, 0};
		if (left <= 0)
			return 0;
		if (poll(&pf, 1, (int)left) <= 0)
			continue;
		ssize_t r = recv(fd, a->buf + a->len, sizeof a->buf - a->len, 0);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			a->closed = 1;
		else
			a->len += (size_t)r;
	}
}

int ack_wait_frames(int fd, struct ack_reader *a, uint64_t frames, int timeout_ms)
{
	uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;

	while (a->frames < frames && a->end == ORBIT_ACK_GOES_ON) {
		int64_t left = (int64_t)(deadline - harness_now_ms());
		if (left <= 0 || ack_next(fd, a, (int)left) != 1)
			return 0;
	}
	return a->frames >= frames;
}

int ack_wait_last(int fd, struct ack_reader *a, int timeout_ms)
{
	uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;

	while (a->end == ORBIT_ACK_GOES_ON) {
		int64_t left = (int64_t)(deadline - harness_now_ms());
		if (left <= 0 || ack_next(fd, a, (int)left) != 1)
			return 0;
	}
	return 1;
}

void ack_reader_free(struct ack_reader *a)
{
	orbit__frame_scratch_free(&a->scratch);
}

/* ---- the proxy ---- */

void proxy_start(struct proxy *p, const char *exe, const struct coll *h, const char *const *args)
{
	int out[2];
	char to[64];
	const char *argv[16];
	int n = 0;

	snprintf(to, sizeof to, "127.0.0.1:%d", h->port);
	argv[n++] = exe;
	argv[n++] = "--to";
	argv[n++] = to;
	for (int i = 0; args != NULL && args[i] != NULL && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	p->via = *h;
	p->via.pid = -1;
	CHECK(pipe(out) == 0);
	fflush(stdout);
	fflush(stderr);
	p->pid = fork();
	CHECK(p->pid >= 0);
	if (p->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(out[0]);
		dup2(out[1], STDOUT_FILENO);
		execv(exe, (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", exe, strerror(errno));
		_exit(127);
	}
	close(out[1]);
	read_listening(&p->via, out[0]);
	close(out[0]);
	fprintf(stderr, "proxy %d on %s in front of %s\n", (int)p->pid, p->via.listen, h->listen);
}

void proxy_stop(struct proxy *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGTERM);
		waitpid(p->pid, NULL, 0);
		p->pid = -1;
	}
}
