/*
 * parse_syntax.c — the one HOST:PORT parser and the one size parser
 * (format/parse.h), and that the agent (ORBIT_COLLECTOR, ORBIT_SEND_BUFFER)
 * and orbit-collector (--listen, --max-capture-size) take exactly the same
 * strings through them.
 *
 *   parse_syntax host_port        the rule, case by case
 *   parse_syntax size             the size rule, case by case
 *   parse_syntax bool             the yes-or-no rule, case by case
 *   parse_syntax agent_bool       ORBIT_SCHED and ORBIT_PAGE_RING_OVERWRITE
 *                                 take it: the words, and one line for the rest
 *   parse_syntax agent_env        ORBIT_COLLECTOR: the line for a bad value
 *                                 and for a URL, once
 *   parse_syntax agree COLLECTOR  every HOST:PORT case through the agent's
 *                                 config and through orbit-collector --listen:
 *                                 the same verdict (port 0 aside)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "harness.h"
#include "parse.h"

struct hp {
	const char *s;
	const char *host; /* NULL: refused */
	unsigned port;
	const char *why; /* substring of the reason when refused */
};

static const struct hp host_ports[] = {
    {"127.0.0.1:7411", "127.0.0.1", 7411, NULL},
    {"localhost:1", "localhost", 1, NULL},
    {"workstation.example.org:65535", "workstation.example.org", 65535, NULL},
    {"[::1]:7411", "::1", 7411, NULL},
    {"[fe80::1%eth0]:80", "fe80::1%eth0", 80, NULL},
    {"host:007", "host", 7, NULL},
    {"::1:7411", NULL, 0, "IPv6 address needs brackets"},
    {"fe80::1:80", NULL, 0, "IPv6 address needs brackets"},
    {"http://host:7411", NULL, 0, "URL"},
    {"tcp://[::1]:7411/", NULL, 0, "URL"},
    {"host", NULL, 0, "expected HOST:PORT"},
    {"[::1]7411", NULL, 0, "expected [IPV6]:PORT"},
    {"[::1", NULL, 0, "expected [IPV6]:PORT"},
    {":7411", NULL, 0, "missing host"},
    {"[]:7411", NULL, 0, "missing host"},
    {"host:", NULL, 0, "port"},
    {"host:65536", NULL, 0, "port"},
    {"host:123456", NULL, 0, "port"},
    {"host:+80", NULL, 0, "port"},
    {"host: 80", NULL, 0, "port"},
    {"host:80 ", NULL, 0, "port"},
    {"host:0x50", NULL, 0, "port"},
    {"host:-1", NULL, 0, "port"},
    {"my host:80", NULL, 0, "character"},
    {"a/b:80", NULL, 0, "character"},
    {"", NULL, 0, "empty"},
};
#define NHOST_PORTS (sizeof host_ports / sizeof host_ports[0])

static void host_port(void)
{
	for (size_t i = 0; i < NHOST_PORTS; i++) {
		const struct hp *c = &host_ports[i];
		char host[ORBIT_HOST_MAX];
		uint16_t port = 0;
		const char *why = NULL;
		int r = orbit__parse_host_port(c->s, 0, host, sizeof host, &port, &why);
		if (c->host != NULL) {
			if (r != 0)
				fprintf(stderr, "'%s' refused: %s\n", c->s, why);
			CHECK(r == 0);
			CHECK(strcmp(host, c->host) == 0);
			CHECK_EQ_U64(port, c->port);
		} else {
			if (r == 0)
				fprintf(stderr, "'%s' taken as %s:%u\n", c->s, host, port);
			CHECK(r == -EINVAL);
			CHECK(why != NULL && strstr(why, c->why) != NULL);
		}
	}
	/* Port 0: only for a listener. */
	char host[ORBIT_HOST_MAX];
	uint16_t port = 1;
	const char *why;
	CHECK(orbit__parse_host_port("127.0.0.1:0", 0, host, sizeof host, &port, &why) == -EINVAL);
	CHECK(orbit__parse_host_port("127.0.0.1:0", 1, host, sizeof host, &port, &why) == 0);
	CHECK_EQ_U64(port, 0);
	/* A host longer than the room is refused, never cut. */
	char longer[600];
	memset(longer, 'a', 300);
	strcpy(longer + 300, ":80");
	CHECK(orbit__parse_host_port(longer, 0, host, sizeof host, &port, &why) == -EINVAL);
	CHECK(orbit__parse_host_port("abcdef:80", 0, host, 6, &port, &why) == -EINVAL);
	CHECK(orbit__parse_host_port("abcde:80", 0, host, 6, &port, &why) == 0);
	/* The authority of a URL, for the hint. */
	char a[64];
	orbit__parse_url_authority("http://host:7411/x", a, sizeof a);
	CHECK(strcmp(a, "host:7411") == 0);
	orbit__parse_url_authority("host:7411", a, sizeof a);
	CHECK(a[0] == '\0');
}

static void size(void)
{
	static const struct {
		const char *s;
		int r;
		uint64_t v;
	} sz[] = {
	    {"0", 0, 0},
	    {"1", 0, 1},
	    {"64M", 0, 64ull << 20},
	    {"64m", 0, 64ull << 20},
	    {"1K", 0, 1024},
	    {"4G", 0, 4ull << 30},
	    {"2t", 0, 2ull << 40},
	    {"18446744073709551615", 0, UINT64_MAX},
	    {"18446744073709551616", -ERANGE, 0},
	    {"16777216T", -ERANGE, 0},
	    {"16777215T", 0, 16777215ull << 40},
	    {"", -EINVAL, 0},
	    {"M", -EINVAL, 0},
	    {" 1", -EINVAL, 0},
	    {"+1", -EINVAL, 0},
	    {"-1", -EINVAL, 0},
	    {"1 ", -EINVAL, 0},
	    {"1KB", -EINVAL, 0},
	    {"1.5M", -EINVAL, 0},
	    {"1P", -EINVAL, 0},
	    {"0x10", -EINVAL, 0},
	};
	for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) {
		uint64_t v = 12345;
		int r = orbit__parse_size(sz[i].s, &v);
		if (r != sz[i].r)
			fprintf(stderr, "'%s': %d, want %d\n", sz[i].s, r, sz[i].r);
		CHECK(r == sz[i].r);
		if (r == 0)
			CHECK_EQ_U64(v, sz[i].v);
	}
	CHECK(orbit__parse_size(NULL, &(uint64_t){0}) == -EINVAL);
}

static void bool_rule(void)
{
	static const struct {
		const char *s;
		int r, v;
	} b[] = {{"1", 0, 1},        {"0", 0, 0},          {"yes", 0, 1},
	         {"no", 0, 0},       {"true", 0, 1},       {"false", 0, 0},
	         {"on", 0, 1},       {"off", 0, 0},        {"YES", 0, 1},
	         {"Off", 0, 0},      {"TRUE", 0, 1},       {"", -EINVAL, 0},
	         {"2", -EINVAL, 0},  {"y", -EINVAL, 0},    {" 1", -EINVAL, 0},
	         {"1 ", -EINVAL, 0}, {"yes!", -EINVAL, 0}, {"enable", -EINVAL, 0},
	         {"01", -EINVAL, 0}};
	for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
		int v = 7;
		int r = orbit__parse_bool(b[i].s, &v);
		if (r != b[i].r)
			fprintf(stderr, "'%s': %d, want %d\n", b[i].s, r, b[i].r);
		CHECK(r == b[i].r);
		CHECK(v == (r == 0 ? b[i].v : 7)); /* untouched when refused */
	}
	CHECK(orbit__parse_bool(NULL, &(int){0}) == -EINVAL);
}

static int read_bools_env(const void *value)
{
	setenv("ORBIT_SCHED", value, 1);
	setenv("ORBIT_PAGE_RING_OVERWRITE", value, 1);
	static struct orbit__config c;
	static struct orbit__config_said said;
	orbit__config_read(&c, &said);
	orbit__config_read(&c, &said); /* said once */
	return (c.sched ? 1 : 0) | (c.page_ring_overwrite ? 2 : 0);
}

static void agent_bool(void)
{
	static const char *const on[] = {"1", "yes", "true", "on", "Yes"};
	static const char *const off[] = {"0", "no", "false", "off", "NO"};
	char err[2048];
	for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
		CHECK(test_in_child(read_bools_env, on[i], err, sizeof err) == 3);
		CHECK(err[0] == '\0');
		CHECK(test_in_child(read_bools_env, off[i], err, sizeof err) == 0);
		CHECK(err[0] == '\0');
	}
	CHECK(test_in_child(read_bools_env, "enabled", err, sizeof err) == 0);
	CHECK(strcmp(err, "orbit: ORBIT_PAGE_RING_OVERWRITE=enabled is not 1/0, yes/no, "
	                  "true/false or on/off; using 0\n"
	                  "orbit: ORBIT_SCHED=enabled is not 1/0, yes/no, true/false or on/off; "
	                  "using 0\n") == 0);
}

static int read_collector_env(const void *value)
{
	setenv("ORBIT_COLLECTOR", value, 1);
	static struct orbit__config c;
	static struct orbit__config_said said;
	orbit__config_read(&c, &said);
	orbit__config_read(&c, &said); /* said once */
	return c.collector_set && c.collector_ok ? 0 : 1;
}

/* The agent's verdict on ORBIT_COLLECTOR=s, in a child: 1 taken, 0 refused;
 * its stderr into err. */
static int agent_takes(const char *s, char *err, size_t errlen)
{
	return test_in_child(read_collector_env, s, err, errlen) == 0;
}

static int lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void agent_env(void)
{
	char err[2048];
	CHECK(agent_takes("127.0.0.1:7411", err, sizeof err) && err[0] == '\0');
	CHECK(!agent_takes("::1:7411", err, sizeof err));
	CHECK(lines(err) == 1);
	CHECK(strcmp(err, "orbit: ORBIT_COLLECTOR=::1:7411 is not HOST:PORT (an IPv6 address "
	                  "needs brackets: [::1]:7411); tracing is off\n") == 0);
	CHECK(!agent_takes("http://host:7411/", err, sizeof err));
	CHECK(strcmp(err, "orbit: ORBIT_COLLECTOR=http://host:7411/ is a URL; ORBIT_COLLECTOR "
	                  "is HOST:PORT (host:7411); tracing is off\n") == 0);
	CHECK(!agent_takes("host:0", err, sizeof err));
	CHECK(strstr(err, "from 1 to 65535") != NULL && lines(err) == 1);
}

static const char *collector; /* agree's orbit-collector */

/* orbit-collector's verdict on --listen s: 1 taken (it goes on to
 * --version), 0 refused with one line. */
static int collector_takes(const char *s)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		dup2(null, 2);
		execl(collector, collector, "--listen", s, "--version", (char *)NULL);
		_exit(99);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
	CHECK(WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 1);
	return WEXITSTATUS(st) == 0;
}

static void agree(void)
{
	char err[2048];
	CHECK(collector != NULL); /* parse_syntax agree COLLECTOR */
	for (size_t i = 0; i < NHOST_PORTS; i++) {
		int a = agent_takes(host_ports[i].s, err, sizeof err);
		int c = collector_takes(host_ports[i].s);
		if (a != c || a != (host_ports[i].host != NULL))
			fprintf(stderr, "'%s': agent %s, collector %s\n", host_ports[i].s,
			        a ? "takes it" : "refuses it", c ? "takes it" : "refuses it");
		CHECK(a == c);
		CHECK(a == (host_ports[i].host != NULL));
	}
	/* Port 0 is the one difference: a listener's free port. */
	CHECK(!agent_takes("127.0.0.1:0", err, sizeof err));
	CHECK(collector_takes("127.0.0.1:0"));
}

static const struct test_case cases[] = {
    {"host_port", host_port},   {"size", size},           {"bool", bool_rule},
    {"agent_bool", agent_bool}, {"agent_env", agent_env}, {"agree", agree},
};

TEST_MAIN_WITH(cases, .args = "[COLLECTOR]", .arg = &collector)
