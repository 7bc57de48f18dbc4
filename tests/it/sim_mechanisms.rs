//! Each mechanism of the simulated agents, one property each: with its parameter at its
//! neutral value, the structure it reads (schemas, positions, the observation's tokens,
//! checks asked, hops, the guide) moves nothing, whatever every other parameter is. So an
//! effect of that structure in a study comes from that mechanism and no other.

use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tbb_agent::sim::instructions::{Explained, Instructions};
use tbb_agent::sim::mechanisms::{
    follow_probability, misread_probability, reasoning_tokens, route_confusion, stale_probability,
    stall_probability, ReadInputs, SpendInputs,
};
use tbb_agent::sim::observe::Layout;
use tbb_agent::sim::Params;

/// Any valid parameters: every rate and amount in [0, 1] (amounts scaled to tokens).
fn any_params() -> impl Strategy<Value = Params> {
    let names: Vec<String> = Params::names()
        .into_iter()
        .filter(|n| {
            !matches!(
                n.as_str(),
                "reasoning_counts_against_cap" | "reports_reasoning"
            )
        })
        .collect();
    proptest::collection::vec(0.0f64..=1.0, names.len()).prop_map(move |values| {
        let mut table = toml::Table::new();
        for (name, x) in names.iter().zip(values) {
            let scale = match name.as_str() {
                "reasoning_base" => 500.0,
                "reasoning_per_schema" => 8.0,
                "reasoning_per_ktok" => 20.0,
                "spike_factor" => 10.0,
                _ => 1.0,
            };
            table.insert(name.clone(), toml::Value::Float(x * scale));
        }
        Params::from_table(Some(&table)).unwrap_or_else(|e| panic!("{e}"))
    })
}

fn asked(checks_per_call: u32, explained: Explained) -> Instructions {
    Instructions {
        checks_per_call,
        explained,
    }
}

fn read(
    positions: usize,
    view_tokens: u64,
    facts_in_record: usize,
    hops_followed: usize,
    prompt_tokens: u64,
    instructions: Instructions,
) -> ReadInputs {
    ReadInputs {
        layout: Layout::Compact,
        positions,
        view_tokens,
        facts_in_record,
        hops_followed,
        prompt_tokens,
        asked: instructions,
    }
}

fn spend(p: &Params, schemas: usize, prompt_tokens: u64, checks: u32, seed: u64) -> u64 {
    let x = SpendInputs {
        schemas,
        prompt_tokens,
        located: false,
        asked: asked(checks, Explained::default()),
    };
    reasoning_tokens(p, x, &mut ChaCha8Rng::seed_from_u64(seed))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn misreads_move_with_positions_only_through_misread_per_position(
        p in any_params(), positions in 1usize..20,
    ) {
        let p = Params { misread_per_position: 0.0, ..p };
        let none = Explained::default();
        prop_assert_eq!(
            misread_probability(&p, read(0, 300, 2, 1, 5_000, asked(0, none))),
            misread_probability(&p, read(positions, 300, 2, 1, 5_000, asked(0, none)))
        );
    }

    #[test]
    fn misreads_move_with_the_view_only_through_misread_per_ktok_view(
        p in any_params(), view in 1u64..5_000,
    ) {
        let p = Params { misread_per_ktok_view: 0.0, ..p };
        let none = Explained::default();
        prop_assert_eq!(
            misread_probability(&p, read(5, 0, 2, 1, 5_000, asked(0, none))),
            misread_probability(&p, read(5, view, 2, 1, 5_000, asked(0, none)))
        );
    }

    #[test]
    fn misreads_move_with_crowding_hops_context_and_the_guide_only_through_theirs(
        p in any_params(), facts in 2usize..8, hops in 1usize..6, tokens in 1u64..60_000,
    ) {
        let none = Explained::default();
        let at = |p: &Params, r: ReadInputs| misread_probability(p, r);
        let q = Params { crowding: 0.0, ..p.clone() };
        prop_assert_eq!(at(&q, read(5, 300, 1, 0, 0, asked(0, none))),
                        at(&q, read(5, 300, facts, 0, 0, asked(0, none))));
        let q = Params { hop_care: 0.0, ..p.clone() };
        prop_assert_eq!(at(&q, read(5, 300, 1, 0, 0, asked(0, none))),
                        at(&q, read(5, 300, 1, hops, 0, asked(0, none))));
        let q = Params { context_misread: 0.0, ..p.clone() };
        prop_assert_eq!(at(&q, read(5, 300, 1, 0, 0, asked(0, none))),
                        at(&q, read(5, 300, 1, 0, tokens, asked(0, none))));
        let q = Params { guide_relief: 0.0, ..p };
        prop_assert_eq!(at(&q, read(5, 300, 1, 0, 0, asked(0, none))),
                        at(&q, read(5, 300, 1, 0, 0, asked(0, Explained::ALL))));
    }

    #[test]
    fn checks_move_reasoning_and_care_only_through_their_parameters(
        p in any_params(), checks in 1u32..8, hop in 1usize..6, seed in 0u64..1_000,
    ) {
        let q = Params { reasoning_per_check: 0.0, ..p.clone() };
        prop_assert_eq!(spend(&q, 64, 4_000, 0, seed), spend(&q, 64, 4_000, checks, seed));
        let q = Params { care_per_check: 0.0, ..p };
        let none = Explained::default();
        prop_assert_eq!(follow_probability(&q, hop, asked(0, none)),
                        follow_probability(&q, hop, asked(checks, none)));
        prop_assert_eq!(stale_probability(&q, hop, asked(0, none)),
                        stale_probability(&q, hop, asked(checks, none)));
    }

    #[test]
    fn the_menu_moves_reasoning_only_through_its_per_schema_parameters(
        p in any_params(), schemas in 1usize..256, seed in 0u64..1_000,
    ) {
        let q = Params { reasoning_per_schema: 0.0, spike_per_100_schemas: 0.0, ..p };
        prop_assert_eq!(spend(&q, 0, 4_000, 0, seed), spend(&q, schemas, 4_000, 0, seed));
    }

    #[test]
    fn the_prompt_moves_reasoning_and_stalls_only_through_their_per_token_parameters(
        p in any_params(), tokens in 1u64..100_000, seed in 0u64..1_000,
    ) {
        let q = Params { reasoning_per_ktok: 0.0, ..p.clone() };
        prop_assert_eq!(spend(&q, 64, 0, 0, seed), spend(&q, 64, tokens, 0, seed));
        let q = Params { stall_per_10k: 0.0, ..p };
        prop_assert_eq!(stall_probability(&q, 0), stall_probability(&q, tokens));
    }

    #[test]
    fn look_alikes_and_the_menu_pull_a_search_only_through_their_parameters(
        p in any_params(), n in 1usize..6, schemas in 9usize..256, seed in 0u64..1_000,
    ) {
        let pick = |q: &Params, near: usize, look: usize, unrelated: usize, schemas: usize| {
            route_confusion(q, near, look, unrelated, schemas, &mut ChaCha8Rng::seed_from_u64(seed))
        };
        let q = Params { near_miss_confusion: 0.0, ..p.clone() };
        prop_assert_eq!(pick(&q, 0, 0, 4, 64), pick(&q, n, 0, 4, 64));
        let q = Params { lookalike_confusion: 0.0, ..p.clone() };
        prop_assert_eq!(pick(&q, 0, 0, 4, 64), pick(&q, 0, n, 4, 64));
        let q = Params { menu_dilution: 0.0, ..p };
        prop_assert_eq!(pick(&q, 0, 0, 4, 8), pick(&q, 0, 0, 4, schemas));
    }

    #[test]
    fn hops_wear_the_agent_down_only_through_hop_decay(
        p in any_params(), hop in 2usize..8,
    ) {
        let q = Params { hop_decay: 1.0, ..p };
        let none = Explained::default();
        prop_assert_eq!(follow_probability(&q, 1, asked(0, none)),
                        follow_probability(&q, hop, asked(0, none)));
    }
}
