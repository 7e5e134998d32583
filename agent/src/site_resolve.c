/*
 * site_resolve.c — a call site's descriptor read from an address that
 * shared memory gave (site_resolve.h).
 *
 * Why an address is safe to read. The macros of orbit.h define each
 * descriptor as a `static const` object with a constant initializer, so the
 * compiler puts it in read-only data: .rodata, or in a position-independent
 * object .data.rel.ro, which the loader makes read-only after relocation
 * (PT_GNU_RELRO). Its file and function are string literals and __func__,
 * in .rodata. An address is read only if, under the dynamic loader's lock:
 *
 *   1. [addr, addr + sizeof descriptor) lies inside one PT_LOAD segment of
 *      an object loaded now (dl_iterate_phdr: the executable, its
 *      libraries, every dlopen'd object), readable, and read-only: a
 *      segment without PF_W, or the part of one PT_GNU_RELRO covers;
 *   2. addr is aligned as a descriptor is;
 *   3. it starts with ORBIT__SITE_MAGIC and its padding word is zero;
 *   4. its file and function pointers lie in read-only segments of the
 *      same object, and each text ends (NUL) inside its segment.
 *
 * 1 means the bytes are mapped and stay mapped while they are read:
 * dl_iterate_phdr holds the loader's lock during its callback, which
 * dlclose takes before unmapping, and every byte is copied out before the
 * callback returns. 1 and 3 mean a writer of the segment can only point the
 * agent at bytes the compiler and linker wrote, never at data the program
 * fills at run time (.data, .bss, heap, stacks are writable or not in any
 * object); at worst a forged address names another call site, or read-only
 * bytes that happen to match, whose text is then bounded by 4. A build
 * without RELRO (-z norelro) keeps descriptors in writable memory: they are
 * not trusted and those records have no location (docs/api.md).
 */
#include "site_resolve.h"

#include <errno.h>
#include <link.h>
#include <stdalign.h>
#include <string.h>

#include "orbit.h"

/* The reads of the bytes an address names: plain byte loads, which a
 * sanitizer does not check, because they may lawfully read read-only data
 * that is not one C object (a forged address inside or between
 * descriptors, strings, constants): checks 1 and 4 above are what keeps
 * them inside mapped memory. */
#if defined(__clang__) || defined(__GNUC__)
#define RAW_READ __attribute__((no_sanitize_address, noinline))
#else
#define RAW_READ
#endif

RAW_READ static void raw_copy(void *dst, const void *src, size_t n)
{
	const volatile unsigned char *s = src;
	unsigned char *d = dst;
	for (size_t i = 0; i < n; i++)
		d[i] = s[i];
}

/* Copies the text at p, up to its NUL, which must come within limit
 * bytes, into out (cut at max bytes); its length, or -1 without a NUL. */
RAW_READ static long raw_text(const char *p, size_t limit, char *out, size_t max)
{
	const volatile char *s = p;
	for (size_t i = 0; i < limit; i++) {
		char c = s[i];
		if (c == '\0') {
			out[i < max ? i : max] = '\0';
			return (long)i;
		}
		if (i < max)
			out[i] = c;
	}
	return -1;
}

struct lookup {
	uintptr_t addr;
	struct orbit__site_text *out;
	int found; /* 1: the object holding addr was seen; 2: and it is a descriptor */
};

/* The end of the read-only part of info's segments that holds
 * [a, a + len), or 0 when none does. */
static uintptr_t readonly_end(const struct dl_phdr_info *info, uintptr_t a, size_t len)
{
	uintptr_t relro0 = 0, relro1 = 0;
	for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_GNU_RELRO) {
			relro0 = info->dlpi_addr + ph->p_vaddr;
			relro1 = relro0 + ph->p_memsz;
		}
	}
	for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R))
			continue;
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		uintptr_t e = s + ph->p_filesz; /* bytes past filesz are .bss */
		if (a < s || a >= e || len > e - a)
			continue;
		if (!(ph->p_flags & PF_W))
			return e;
		if (a >= relro0 && a < relro1 && len <= relro1 - a)
			return relro1 < e ? relro1 : e;
		return 0;
	}
	return 0;
}

/* Copies the text at p of info's read-only data into out (cut at max
 * bytes); 0, or -EFAULT when it is not there or not ended inside it. */
static int copy_text(const struct dl_phdr_info *info, const char *p, char *out, size_t max)
{
	uintptr_t a = (uintptr_t)p;
	uintptr_t end = readonly_end(info, a, 1);
	if (end == 0)
		return -EFAULT;
	return raw_text(p, end - a, out, max) < 0 ? -EFAULT : 0;
}

/* Called with the loader's lock held, once per loaded object. */
static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct lookup *l = arg;
	if (readonly_end(info, l->addr, sizeof(struct orbit__site)) == 0)
		return 0;
	l->found = 1;
	struct orbit__site d;
	raw_copy(&d, (const void *)l->addr, sizeof d);
	if (d.magic != ORBIT__SITE_MAGIC || d.zero != 0)
		return 1;
	if (copy_text(info, d.file, l->out->file, ORBIT_SITE_TEXT_MAX) != 0 ||
	    copy_text(info, d.function, l->out->function, ORBIT_SITE_TEXT_MAX) != 0)
		return 1;
	l->out->line = d.line;
	l->found = 2;
	return 1; /* objects do not overlap: no other holds it */
}

int orbit__site_resolve(uint64_t addr, struct orbit__site_text *out)
{
	if (addr == 0 || (uint64_t)(uintptr_t)addr != addr ||
	    addr % alignof(struct orbit__site) != 0)
		return -EFAULT;
	struct lookup l = {(uintptr_t)addr, out, 0};
	dl_iterate_phdr(visit, &l);
	return l.found == 2 ? 0 : -EFAULT;
}
