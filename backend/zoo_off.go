//go:build !zoo_any_call_ended && !zoo_bindings_dropped && !zoo_cancel_no_settle && !zoo_cancel_not_forwarded && !zoo_cancel_overrides && !zoo_cancel_proves_end && !zoo_drain_no_wait && !zoo_dropped_still_queued && !zoo_ended_at_results && !zoo_fault_as_miss && !zoo_fold_stops_listening && !zoo_gauge_not_decremented && !zoo_hold_early && !zoo_indoubt_ignored && !zoo_inflight_leak_unprovable && !zoo_late_success && !zoo_lookup_outage_as_miss && !zoo_marks_batch_index && !zoo_marks_shift && !zoo_mask_ignored && !zoo_no_drain_deadline && !zoo_nocut_key && !zoo_nocut_max && !zoo_outcome_is_end && !zoo_publish_rewrites_present && !zoo_raced_declined_swapped && !zoo_slot_leak_refused && !zoo_submit_error_no_escape && !zoo_timeout_no_labels && !zoo_unprovable_as_ended

package backend

// zoo is "" in every normal build: every planted-bug branch is constant
// false and the compiler removes it. The constraint above negates every
// zoo_<name> tag; TestZooTags keeps it complete.
const zoo = ""
