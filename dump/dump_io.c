/* dump_io.c — how orbit-dump reads the segment file and says what is wrong
 * with it (dump.h): bounded preads, and one problem line per dump. Below
 * dump_read.c and dump_rings.c, which both read through it. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dump.h"

const char *orbit__dump_who(const struct orbit_dump *d)
{
	return d->who != NULL ? d->who : "orbit-dump";
}

void orbit__dump_problem(struct orbit_dump *d, uint64_t offset, const char *fmt, ...)
{
	char what[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (!d->damaged)
		snprintf(d->problem, sizeof d->problem, "offset %llu: %s",
		         (unsigned long long)offset, what);
	/* One line per dump: the first problem; later ones follow from it. */
	if (!d->damaged)
		fprintf(d->err, "%s: %s: offset %llu: %s\n", orbit__dump_who(d), d->name,
		        (unsigned long long)offset, what);
	d->damaged = 1;
}

int orbit__dump_affords(struct orbit_dump *d, uint64_t len, uint64_t off, const char *what)
{
	if (len <= d->held)
		return 0;
	orbit__dump_problem(d, off,
	                    "%s: %llu bytes to copy, more than the segment holds (%llu bytes of "
	                    "%llu): not read",
	                    what, (unsigned long long)len, (unsigned long long)d->held,
	                    (unsigned long long)d->file_size);
	return -1;
}

int orbit__dump_pread(struct orbit_dump *d, void *buf, uint64_t len, uint64_t off)
{
	uint8_t *p = buf;
	uint64_t got = 0;
	while (got < len) {
		ssize_t n = pread(d->fd, p + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			orbit__dump_problem(d, off + got, "cannot read the segment: %s",
			                    strerror(errno));
			return -1;
		}
		if (n == 0) {
			struct stat st;
			uint64_t now = fstat(d->fd, &st) == 0 ? (uint64_t)st.st_size : 0;
			orbit__dump_problem(
			    d, off + got,
			    "the segment ends at %llu bytes (its header says %llu): "
			    "cut%s",
			    (unsigned long long)now, (unsigned long long)d->l.total_size,
			    now < d->file_size ? ", shrunk while it was read" : "");
			return -1;
		}
		got += (uint64_t)n;
	}
	return 0;
}
