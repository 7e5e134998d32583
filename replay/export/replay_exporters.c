/*
 * replay_exporters.c — every exporter orbit-replay has (replay_export.h),
 * in the order they begin, get each event, and end. The summaries come
 * last, when the files are written: the text summary after --log's last
 * lines on the same standard output.
 */
#include "replay_export.h"

const struct orbit_rp_exporter *const orbit__rp_exporters[] = {
    &orbit__rp_export_csv,
    &orbit__rp_export_values_csv,
    &orbit__rp_export_chrome,
    &orbit__rp_export_perfetto,
    &orbit__rp_export_html,
    &orbit__rp_export_log,
    &orbit__rp_export_clickhouse,
    &orbit__rp_export_follow,
    &orbit__rp_export_summary,
    &orbit__rp_export_json,
    NULL, /* the end (this comment keeps clang-format to one per line) */
};
