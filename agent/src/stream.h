/*
 * stream.h — what a stream says (docs/format.md, section 4), and when: the
 * Handshake alone in the first frame, then RingBatch and FtracePage packets
 * with the Loss and PageLoss packets that account for them, and at the end
 * the thread names, the final losses and EndOfStream. The packets and their
 * frames are format/stream_writer.h's; the accounting is the ledger's
 * (ledger.h); where the frames go is the outputs' (output.h).
 *
 * The writer cuts a frame once its content reaches ORBIT_SW_FRAME_TARGET;
 * this file cuts it at the end of a pass once it is old enough
 * (FRAME_AGE_MS since its first packet), or when asked (a flush, the end):
 * frames are cut by size and age, not one per pass. Every finished frame
 * goes to the stream's frame callback with its sequence number. Runs on
 * the agent thread only.
 */
#ifndef ORBIT_AGENT_STREAM_H
#define ORBIT_AGENT_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "config.h"
#include "ledger.h"
#include "output.h"
#include "scope_ring.h"

struct orbit__sched;

/* Where finished frames go: 0, or a negative errno when the frame was not
 * taken (its records are then counted unsent). */
struct orbit__stream_sink {
	void *ctx;
	int (*frame)(void *ctx, const struct orbit__frame *f);
};

/* Sets the stream up (no stream is open yet): 0 or -errno. */
int orbit__stream_init(const struct orbit__config *cfg, struct orbit__drain *drain,
                       struct orbit__clock_conv *clock, struct orbit__ledger *ledger,
                       const struct orbit__stream_sink *sink);
void orbit__stream_free(void);

/* A new stream begins where the drain stands: its Handshake frame goes out.
 * With ORBIT_SCHED, the first one waits for orbit__stream_sched (the
 * Handshake says whether kernel events follow); until then no stream is
 * open. */
void orbit__stream_begin(uint64_t now_ms);
/* Kernel scheduling is settled: the recorder whose formats every Handshake
 * from now on carries (KernelSched), or NULL and the reason it is off
 * (kernel_sched_off). A stream that waited begins now. */
void orbit__stream_sched(struct orbit__sched *sched, const char *off);
/* One page read from the recorder (docs/format.md 4.10, KernelPage): 0, or
 * a negative errno when no stream took it (counted as unsent). */
int orbit__stream_kernel_page(uint32_t cpu, const uint8_t *page, size_t len);
/* The stream broke (its output is gone): what is not in a finished frame
 * is unsent. */
void orbit__stream_abort(void);
int orbit__stream_open(void);

/* Records of one drain pass, times already ns. */
void orbit__stream_records(uint32_t ring, uint64_t first_claim, const uint8_t *records, uint32_t n);
/* One log page, times already ns (counted for the ledger whether or not a
 * stream is open). */
void orbit__stream_page(uint32_t ring, const uint8_t *page, size_t len);
/* End of a drain pass: Loss, PageLoss and KernelLoss packets for what changed, a
 * keepalive if nothing was said for a while; the frame goes out if it is
 * old enough, or now with cut. */
void orbit__stream_pass_done(uint64_t now_ms, int cut);
/* The stream's last packets (thread names, final losses, EndOfStream) in
 * its last frame. */
void orbit__stream_end(void);

#endif
