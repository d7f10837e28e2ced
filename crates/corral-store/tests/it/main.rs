//! corral-store's integration tests.
//!
//! The heart of it is the conformance suite (`conformance/`): every promise of the `Store`
//! contract written in the crate docs, checked the same way against every backend. The
//! `conformance_tests!` macro below generates one `#[tokio::test]` per check for a backend;
//! each test gets a fresh store from `corral_store::testing`, so they run in parallel.
//! Backend-specific promises (SQLite's persistence and crash safety) live beside the generated
//! tests in that backend's module.

/// Generates the conformance suite for one backend. `$make` is an async function returning a
/// `TestStore`, or an `Option<TestStore>` that is `None` when the backend cannot run here (etcd
/// without an etcd binary); the test then returns early, and the factory has said why.
macro_rules! conformance_tests {
    ($make:path) => {
        conformance_tests!(@each $make;
            revisions::revision_starts_at_one,
            revisions::every_write_adds_exactly_one,
            revisions::failed_writes_leave_the_revision_alone,
            revisions::reads_report_the_current_revision,
            reads::get_at_past_revisions,
            reads::range_at_past_revisions,
            reads::future_revisions_are_refused,
            reads::range_is_in_byte_order_within_the_prefix,
            reads::range_prefixes_ending_in_high_bytes,
            reads::range_with_an_empty_prefix_returns_everything,
            reads::range_limit_and_more,
            reads::range_limit_counts_only_live_keys,
            reads::range_start_must_be_inside_the_prefix,
            reads::range_pages_at_a_fixed_revision_while_writes_continue,
            writes::create_fails_if_the_key_exists,
            writes::update_checks_the_mod_revision,
            writes::delete_checks_the_mod_revision_and_returns_the_last_value,
            writes::missing_keys_are_not_found,
            writes::recreate_after_delete_gets_a_new_create_revision,
            writes::values_round_trip,
            writes::oversized_values_are_refused,
            watch::watch_replays_history_then_continues_live,
            watch::watch_replays_a_long_history,
            watch::watch_from_the_current_revision_sees_only_new_changes,
            watch::watch_from_a_future_revision_waits_for_it,
            watch::watch_filters_by_prefix,
            watch::watch_events_carry_values_and_previous_versions,
            watch::watchers_from_different_revisions_agree,
            watch::watch_sees_every_acknowledged_write_of_concurrent_writers,
            watch::watch_started_during_writes_hands_off_without_gaps,
            watch::slow_watcher_loses_nothing,
            compaction::nothing_is_compacted_at_first,
            compaction::reads_below_the_compacted_revision_fail,
            compaction::reads_at_and_after_the_compacted_revision_succeed,
            compaction::compaction_keeps_the_current_state,
            compaction::watch_below_the_compacted_revision_fails,
            compaction::watch_from_the_compacted_revision_replays_the_rest,
            compaction::compacting_again_is_a_no_op,
            compaction::compacting_the_future_is_refused,
            compaction::live_watch_survives_compaction,
            compaction::writes_continue_after_compacting_everything,
        );
    };
    (@each $make:path; $($module:ident :: $test:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                // `From<T> for Option<T>` lets one macro take both kinds of factory.
                let test_store: Option<corral_store::testing::TestStore> = $make().await.into();
                let Some(test_store) = test_store else {
                    return;
                };
                crate::conformance::$module::$test(test_store.store.clone()).await;
            }
        )*
    };
}

mod conformance;
mod generated_code;
mod sqlite;

mod memory {
    conformance_tests!(corral_store::testing::memory);
}

mod etcd {
    conformance_tests!(corral_store::testing::etcd);
}

/// The whole contract on a three-member etcd cluster one of whose members was killed after the
/// store connected to it: a minority lost is invisible to the store's users.
mod etcd_with_a_killed_member {
    conformance_tests!(corral_store::testing::etcd_with_a_killed_member);
}

/// The same with the member frozen (`SIGSTOP`): its connections stay open and nothing
/// answers, as when its links are cut.
mod etcd_with_a_frozen_member {
    conformance_tests!(corral_store::testing::etcd_with_a_frozen_member);
}

mod etcd_failover;
