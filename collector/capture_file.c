/*
 * capture_file.c — naming and creating capture files.
 *
 * The process name in a file name comes from the peer, which may be hostile:
 * orbit__parse_name_for_file (format/parse.h) makes it safe, and at most
 * ORBIT_COLLECTOR_NAME_MAX bytes are kept. Files are created with
 * O_EXCL: an existing file is never opened, let alone overwritten; a name in
 * use gets a "-1", "-2" ... suffix.
 */
#include "collector.h"

#include "parse.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#define CAPFILE_SUFFIX_MAX 9999

static int capfile_name(char *out, size_t outlen, const char *safe, uint32_t pid, const char *stamp,
                        unsigned suffix)
{
	int n;

	if (suffix == 0)
		n = snprintf(out, outlen, "%s-%u-%s.orbit.zst", safe, pid, stamp);
	else
		n = snprintf(out, outlen, "%s-%u-%s-%u.orbit.zst", safe, pid, stamp, suffix);
	return n > 0 && (size_t)n < outlen ? 0 : -ENAMETOOLONG;
}

int orbit__capfile_create(int dirfd, const char *process_name, uint32_t pid, int64_t when,
                          struct orbit_capture_file *f)
{
	char safe[ORBIT_COLLECTOR_NAME_MAX + 1], stamp[32];
	time_t t = (time_t)when;
	struct tm tm;

	orbit__parse_name_for_file(process_name, safe,
	                           sizeof safe < ORBIT_COLLECTOR_NAME_MAX + 1
	                               ? sizeof safe
	                               : ORBIT_COLLECTOR_NAME_MAX + 1);
	if (gmtime_r(&t, &tm) == NULL || strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm) == 0)
		return -EINVAL;
	for (unsigned suffix = 0; suffix <= CAPFILE_SUFFIX_MAX; suffix++) {
		int err = capfile_name(f->name, sizeof f->name, safe, pid, stamp, suffix);

		if (err)
			return err;
		int fd = openat(dirfd, f->name,
		                O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd >= 0) {
			/* Held while the stream is written: --ingest leaves a
			 * capture being written alone (ingest.c). */
			flock(fd, LOCK_EX | LOCK_NB);
			f->fd = fd;
			f->size = 0;
			f->frames = 0;
			return 0;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}
