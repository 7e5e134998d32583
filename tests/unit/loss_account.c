/*
 * loss_account.c — the format's loss account (format/loss.h) says what
 * docs/format.md section 6 says: each ring's (CPU's) latest packet counts,
 * the one sum leaves unsent out and takes flight_dropped in, the three
 * totals of a stream, and the equations.
 *
 *   loss_account CASE
 *
 *   rings     Loss: latest wins, the sum, the scope equation, the packet back
 *   pages     PageLoss: latest wins, rings out of range left out, the page
 *             equation
 *   kernel    KernelLoss: overrun + dropped, the kernel equation, unknown
 *             with pages unsent
 *   totals    the three totals together; other packets are not loss
 */
#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "harness.h"
#include "loss.h"

static void account_take(struct orbit__loss_account *a, const Orbit__Packet *p)
{
	CHECK(orbit__packet_validate(p) == 0);
	CHECK(orbit__loss_account_packet(a, p) == 1);
}

/* Ring 2's two Loss packets and ring 0's one. */
static void rings(struct orbit__loss_account *a)
{
	Orbit__Packet p = ORBIT__PACKET__INIT;
	Orbit__Loss l = ORBIT__LOSS__INIT;
	p.body_case = ORBIT__PACKET__BODY_LOSS;
	p.loss = &l;
	l.ring = 2, l.lapped = 10, l.unsent = 1000;
	account_take(a, &p);
	l.lapped = 12, l.writer_gone = 1, l.backstop = 2, l.at_end = 3, l.flight_dropped = 4;
	account_take(a, &p); /* cumulative: this one replaces the first */
	l.ring = 0, l.lapped = 5, l.writer_gone = l.backstop = l.at_end = l.flight_dropped = 0;
	account_take(a, &p);
}

static void case_rings(void)
{
	struct orbit__loss_account a = {0};
	rings(&a);
	CHECK_EQ_U64(a.total.records, 12 + 1 + 2 + 3 + 4 + 5); /* never unsent */
	struct orbit__loss r2 = orbit__loss_account_ring(&a, 2);
	CHECK_EQ_U64(orbit__loss_sum(&r2), 22);
	CHECK_EQ_U64(r2.unsent, 1000);
	CHECK(orbit__loss_holds(122, 100, &r2) && !orbit__loss_holds(1122, 100, &r2));
	struct orbit__loss none = orbit__loss_account_ring(&a, 3);
	CHECK_EQ_U64(orbit__loss_sum(&none), 0);
	struct orbit__loss t = {0};
	orbit__loss_add(&t, &r2);
	orbit__loss_add(&t, &r2);
	CHECK(t.flight_dropped == 8 && orbit__loss_sum(&t) == 44);
	Orbit__Loss back;
	orbit__loss_packet(&back, 2, &r2);
	CHECK(back.ring == 2 && back.at_end == 3 && back.flight_dropped == 4 &&
	      back.unsent == 1000);
	orbit__loss_account_free(&a);
}

/* Page ring 1's two PageLoss packets, and one of a ring past the limit. */
static void pages(struct orbit__loss_account *a)
{
	Orbit__Packet p = ORBIT__PACKET__INIT;
	Orbit__PageLoss pl = ORBIT__PAGE_LOSS__INIT;
	p.body_case = ORBIT__PACKET__BODY_PAGE_LOSS;
	p.page_loss = &pl;
	pl.ring = 1, pl.records = 7, pl.pages = 1, pl.unsent = 50;
	account_take(a, &p);
	pl.records = 9;
	account_take(a, &p);
	pl.ring = ORBIT_LOSS_PAGE_RINGS; /* no such page ring: left out */
	account_take(a, &p);
}

static void case_pages(void)
{
	struct orbit__loss_account a = {0};
	pages(&a);
	CHECK_EQ_U64(a.total.log_records, 9); /* never unsent */
	CHECK_EQ_U64(a.total.records + a.total.kernel_events, 0);
	CHECK(orbit__loss_page_holds(19, 10, 9) && !orbit__loss_page_holds(20, 10, 9));
	orbit__loss_account_free(&a);
}

/* CPU 3's KernelLoss and CPU 0's; the last one's counts in *k. */
static void kernel(struct orbit__loss_account *a, struct orbit__kernel_loss *k)
{
	Orbit__Packet p = ORBIT__PACKET__INIT;
	Orbit__KernelLoss kl = ORBIT__KERNEL_LOSS__INIT;
	p.body_case = ORBIT__PACKET__BODY_KERNEL_LOSS;
	p.kernel_loss = &kl;
	kl.cpu = 3, kl.overrun = 4, kl.dropped = 1, kl.read_events = 100;
	account_take(a, &p);
	kl.cpu = 0, kl.overrun = 2, kl.dropped = 0;
	account_take(a, &p);
	orbit__kernel_loss_of(k, &kl);
}

static void case_kernel(void)
{
	struct orbit__loss_account a = {0};
	struct orbit__kernel_loss k;
	kernel(&a, &k);
	CHECK_EQ_U64(a.total.kernel_events, 7);
	CHECK(orbit__kernel_loss_sum(&k) == 2 && orbit__kernel_loss_holds(&k, 100) == 1);
	CHECK(orbit__kernel_loss_holds(&k, 99) == 0);
	struct orbit__kernel_loss t = {0};
	orbit__kernel_loss_add(&t, &k);
	orbit__kernel_loss_add(&t, &k);
	CHECK(t.overrun == 4 && t.read_events == 200 && orbit__kernel_loss_holds(&t, 200) == 1);
	k.unsent_pages = 1;
	CHECK(orbit__kernel_loss_holds(&k, 100) == -1);
	orbit__loss_account_free(&a);
}

static void case_totals(void)
{
	struct orbit__loss_account a = {0};
	struct orbit__kernel_loss k;
	rings(&a);
	pages(&a);
	kernel(&a, &k);
	CHECK(a.total.records == 27 && a.total.log_records == 9 && a.total.kernel_events == 7);
	CHECK_EQ_U64(orbit__loss_total(&a.total), 27 + 9 + 7);
	Orbit__Packet p = ORBIT__PACKET__INIT;
	Orbit__ThreadName tn = ORBIT__THREAD_NAME__INIT;
	p.body_case = ORBIT__PACKET__BODY_THREAD_NAME;
	p.thread_name = &tn;
	CHECK(orbit__loss_account_packet(&a, &p) == 0);
	orbit__loss_account_free(&a);
}

static const struct test_case cases[] = {
    {"rings", case_rings},
    {"pages", case_pages},
    {"kernel", case_kernel},
    {"totals", case_totals},
};

TEST_MAIN(cases)
