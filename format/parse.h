/*
 * parse.h — the syntaxes the programs share: an address, HOST:PORT
 * (ORBIT_COLLECTOR, --listen), and a size (ORBIT_SEND_BUFFER,
 * ORBIT_RING_BUDGET, --max-capture-size, ...), shared by the agent and
 * orbit-collector; and a long option written whole, for the programs that
 * read their options with getopt_long. One parser each, one rule each, so
 * the same string means the same thing everywhere (docs/operations.md and
 * docs/collector.md state the rules).
 */
#ifndef ORBIT_FORMAT_PARSE_H
#define ORBIT_FORMAT_PARSE_H

#include <stddef.h>
#include <stdint.h>

#define ORBIT_HOST_MAX 256u /* bytes of a host, with its NUL */

/*
 * HOST:PORT or [IPV6]:PORT.
 *
 *   - HOST is everything before the only ':' (a host name or an IPv4
 *     address), or everything between '[' and ']' (an IPv6 address, which
 *     needs the brackets: "::1:7411" is refused, "[::1]:7411" is not);
 *     non-empty, shorter than ORBIT_HOST_MAX, no white space, no '/'.
 *   - PORT is decimal digits only, 1 to 65535 (0 to 65535 with port_zero:
 *     a listener's "pick a free port").
 *   - A value with "://" in it is a URL, not an address.
 *
 * 0 with host (NUL-terminated, hostlen bytes of room) and *port filled, or
 * -EINVAL with *why: a short reason in words ("an IPv6 address needs
 * brackets: [::1]:7411"). For a URL, *why is ORBIT_PARSE_URL.
 */
int orbit__parse_host_port(const char *s, int port_zero, char *host, size_t hostlen, uint16_t *port,
                           const char **why);
extern const char ORBIT_PARSE_URL[];

/* What the URL s would be as HOST:PORT, for a hint: the part between "://"
 * and the next '/', into out (outlen bytes of room); "" if there is none. */
void orbit__parse_url_authority(const char *s, char *out, size_t outlen);

/*
 * A size: decimal digits (the first character is one), then optionally one
 * of K, M, G, T in either case, which multiply by 2^10, 2^20, 2^30, 2^40;
 * nothing else, no white space. 0 and *out, -EINVAL for anything else, or
 * -ERANGE when the value does not fit 64 bits. Callers check their own
 * range.
 */
int orbit__parse_size(const char *s, uint64_t *out);

/*
 * A yes-or-no: 1, yes, true, on, or 0, no, false, off, in any case, and
 * nothing else (no white space). 0 and *out (1 or 0), or -EINVAL. The
 * words a refusal names: ORBIT_PARSE_BOOL_WORDS.
 */
#define ORBIT_PARSE_BOOL_WORDS "1/0, yes/no, true/false or on/off"
int orbit__parse_bool(const char *s, int *out);

/*
 * A name from outside (a process name, perhaps a hostile peer's) made safe
 * as part of a file name, into out (outlen bytes of room, at least 8): only
 * [A-Za-z0-9._-] survive (any other byte becomes '_'), a '.' never starts it
 * nor follows another '.' (no "." or ".." or hidden files), a '-' never
 * starts it (no name that reads as an option); NULL or empty is "unknown".
 */
void orbit__parse_name_for_file(const char *in, char *out, size_t outlen);

struct option;

/*
 * Whether the long option getopt_long just returned was written whole.
 * getopt_long takes any unambiguous prefix ("--chrom" for "--chrome"), so a
 * word that works today would mean another option once one is added: every
 * Orbit program takes long options by their whole name only.
 *
 * Call right after getopt_long returned with *longindex = li (set it to -1
 * before the call: it stays -1 for a short option), with the optind and
 * optarg it left. 0: a short option, or the long one written whole
 * ("--name" or "--name=VALUE"); -1: abbreviated, with *written the word as
 * written.
 */
int orbit__parse_long_whole(char *const *argv, int optind, const char *optarg,
                            const struct option *opts, int li, const char **written);

#endif
