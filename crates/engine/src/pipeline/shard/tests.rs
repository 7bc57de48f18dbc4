use std::collections::{BTreeMap, HashMap};

use super::*;
use crate::pipeline::key::NodeKind;
use crate::pipeline::scheduler::selected;

fn spec(index: u32, count: u32) -> ShardSpec {
    ShardSpec { index, count }
}

/// An environment of the given variables only.
fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| vars.get(name).cloned()
}

#[test]
fn a_shard_is_index_slash_count_from_zero() {
    assert_eq!(ShardSpec::parse("0/4"), Ok(spec(0, 4)));
    assert_eq!(ShardSpec::parse("3/4"), Ok(spec(3, 4)));
    assert_eq!(ShardSpec::parse(" 1 / 2 "), Ok(spec(1, 2)));
    assert_eq!(ShardSpec::parse("0/1"), Ok(spec(0, 1)));
    assert_eq!(spec(2, 5).to_string(), "2/5");
}

#[test]
fn a_shard_outside_its_count_no_count_or_no_numbers_is_refused_saying_why() {
    let refused = |given: &str| match ShardSpec::parse(given) {
        Err(e) => e,
        Ok(s) => panic!("{given} parsed as {s}"),
    };
    let out = refused("3/2");
    assert_eq!(out, ShardError::OutOfRange { index: 3, count: 2 });
    assert_eq!(
        out.to_string(),
        "shard 3 does not exist among 2 shards: shards count from 0, so the last is 1/2"
    );
    // The 1-based mistake names the same fix.
    assert_eq!(
        refused("2/2"),
        ShardError::OutOfRange { index: 2, count: 2 }
    );
    let none = refused("0/0");
    assert!(matches!(none, ShardError::NoShards { .. }));
    assert_eq!(
        none.to_string(),
        "`--shard 0/0` splits the study into no shards"
    );
    for bad in ["x/y", "1", "1/", "/2", "-1/2", "1/2/3", "", "auto/2"] {
        let e = refused(bad);
        assert!(matches!(e, ShardError::Syntax { .. }), "{bad}: {e:?}");
        assert!(e.to_string().contains("expected INDEX/COUNT or `auto`"));
    }
    let help = |e: &ShardError| {
        miette::Diagnostic::help(e)
            .map(|h| h.to_string())
            .unwrap_or_default()
    };
    assert!(help(&refused("x/y")).contains("--shard 0/4"));
    assert!(help(&ShardError::Unlocked).contains("--locked"));
}

#[test]
fn a_named_shard_ignores_the_environment_and_agrees_with_shards() {
    let k8s = env(&[(KUBERNETES_INDEX, "7")]);
    assert_eq!(ShardSpec::resolve("1/3", None, &k8s), Ok(spec(1, 3)));
    assert_eq!(ShardSpec::resolve("1/3", Some(3), &k8s), Ok(spec(1, 3)));
    assert_eq!(
        ShardSpec::resolve("1/3", Some(4), &k8s),
        Err(ShardError::CountDisagrees {
            spec: spec(1, 3),
            shards: 4
        })
    );
}

#[test]
fn auto_reads_a_kubernetes_index_with_the_count_given() {
    let k8s = |index: &str| env(&[(KUBERNETES_INDEX, index)]);
    assert_eq!(
        ShardSpec::resolve("auto", Some(4), &k8s("0")),
        Ok(spec(0, 4))
    );
    assert_eq!(
        ShardSpec::resolve("auto", Some(4), &k8s("3")),
        Ok(spec(3, 4))
    );
    assert_eq!(
        ShardSpec::resolve("auto", None, &k8s("3")),
        Err(ShardError::CountMissing)
    );
    assert_eq!(
        ShardSpec::resolve("auto", Some(4), &k8s("4")),
        Err(ShardError::OutOfRange { index: 4, count: 4 })
    );
    assert_eq!(
        ShardSpec::resolve("auto", Some(0), &k8s("0")),
        Err(ShardError::NoShards {
            given: "0/0".into()
        })
    );
    let e = ShardSpec::resolve("auto", Some(4), &k8s("two"));
    assert_eq!(
        e,
        Err(ShardError::BadVariable {
            variable: KUBERNETES_INDEX,
            value: Some("two".into()),
            expected: "a number from 0",
        })
    );
    assert_eq!(
        e.map_err(|e| e.to_string()),
        Err("JOB_COMPLETION_INDEX is `two`: --shard auto needs a number from 0".into())
    );
}

#[test]
fn auto_reads_a_slurm_array_from_its_first_id() {
    let array = |id: &str, min: &str, max: &str, count: &str| {
        env(&[
            (SLURM_ID, id),
            (SLURM_MIN, min),
            (SLURM_MAX, max),
            (SLURM_COUNT, count),
            (SLURM_STEP, "1"),
        ])
    };
    // --array=1-4: ids from 1.
    assert_eq!(
        ShardSpec::resolve("auto", None, &array("1", "1", "4", "4")),
        Ok(spec(0, 4))
    );
    assert_eq!(
        ShardSpec::resolve("auto", None, &array("4", "1", "4", "4")),
        Ok(spec(3, 4))
    );
    // --array=10-12, and --shards agreeing.
    assert_eq!(
        ShardSpec::resolve("auto", Some(3), &array("11", "10", "12", "3")),
        Ok(spec(1, 3))
    );
    assert_eq!(
        ShardSpec::resolve("auto", Some(4), &array("11", "10", "12", "3")),
        Err(ShardError::CountDisagrees {
            spec: spec(1, 3),
            shards: 4
        })
    );
    // --array=0,2,4 (not a range) and --array=0-4:2 (a step).
    assert!(matches!(
        ShardSpec::resolve("auto", None, &array("2", "0", "4", "3")),
        Err(ShardError::SlurmArray { .. })
    ));
    let stepped = env(&[
        (SLURM_ID, "2"),
        (SLURM_MIN, "0"),
        (SLURM_COUNT, "3"),
        (SLURM_STEP, "2"),
    ]);
    assert!(matches!(
        ShardSpec::resolve("auto", None, &stepped),
        Err(ShardError::SlurmArray { .. })
    ));
    // Without the optional max and step, id - min of count.
    let plain = env(&[(SLURM_ID, "5"), (SLURM_MIN, "5"), (SLURM_COUNT, "2")]);
    assert_eq!(ShardSpec::resolve("auto", None, &plain), Ok(spec(0, 2)));
    let missing = env(&[(SLURM_ID, "5"), (SLURM_MIN, "5")]);
    assert_eq!(
        ShardSpec::resolve("auto", None, &missing),
        Err(ShardError::BadVariable {
            variable: SLURM_COUNT,
            value: None,
            expected: "the array's task count",
        })
    );
    let below = env(&[(SLURM_ID, "1"), (SLURM_MIN, "5"), (SLURM_COUNT, "2")]);
    assert!(matches!(
        ShardSpec::resolve("auto", None, &below),
        Err(ShardError::SlurmArray { .. })
    ));
    let garbled = env(&[(SLURM_ID, "x1"), (SLURM_MIN, "0"), (SLURM_COUNT, "2")]);
    assert!(matches!(
        ShardSpec::resolve("auto", None, &garbled),
        Err(ShardError::BadVariable {
            variable: SLURM_ID,
            ..
        })
    ));
}

#[test]
fn auto_without_a_launcher_or_with_two_is_refused() {
    assert_eq!(
        ShardSpec::resolve("auto", Some(2), &env(&[])),
        Err(ShardError::NoLauncher)
    );
    assert_eq!(
        ShardSpec::resolve(
            "auto",
            Some(2),
            &env(&[(KUBERNETES_INDEX, "0"), (SLURM_ID, "0")])
        ),
        Err(ShardError::TwoLaunchers)
    );
}

fn limited(name: &str, slots: usize) -> Route {
    Route {
        name: name.into(),
        slots,
        limited: true,
    }
}

#[test]
fn a_route_s_slots_are_divided_among_at_most_its_concurrency_of_shards() {
    for count in 1..=9u32 {
        for slots in 1..=12usize {
            let route = limited("https://api.example/v1", slots);
            let shards = route.shards(count);
            assert_eq!(shards.len(), slots.min(count as usize));
            let shares: Vec<usize> = (0..count).map(|i| route.share(spec(i, count))).collect();
            assert_eq!(shares.iter().sum::<usize>(), slots, "{slots} over {count}");
            for (i, &share) in shares.iter().enumerate() {
                assert_eq!(share > 0, shards.contains(&(i as u32)));
            }
            let (low, high) = (shares.iter().filter(|&&s| s > 0).min(), shares.iter().max());
            assert!(high.zip(low).is_some_and(|(h, l)| h - l <= 1), "{shares:?}");
        }
    }
    // The simulated panel has no provider to protect: every shard, all its slots.
    let sim = Route {
        name: "sim".into(),
        slots: 4,
        limited: false,
    };
    assert_eq!(sim.shards(8).len(), 8);
    assert!((0..8).all(|i| sim.share(spec(i, 8)) == 4));
}

/// Conditions `prefix-0` … of one route.
fn named(prefix: &str, n: usize, route: usize) -> Vec<(String, usize)> {
    (0..n).map(|k| (format!("{prefix}-{k}"), route)).collect()
}

/// Shard of each condition, by identity.
fn dealt(conditions: &[(String, usize)], routes: &[Route], count: u32) -> BTreeMap<String, u32> {
    conditions
        .iter()
        .map(|(c, _)| c.clone())
        .zip(deal(conditions, routes, count))
        .collect()
}

#[test]
fn each_route_is_dealt_evenly_to_its_shards() {
    let routes = [limited("a", 64), limited("b", 2), limited("c", 5)];
    let mut conditions = named("a", 101, 0);
    conditions.extend(named("b", 37, 1));
    conditions.extend(named("c", 3, 2));
    for count in [1u32, 2, 3, 5, 8] {
        let shards = deal(&conditions, &routes, count);
        for (r, route) in routes.iter().enumerate() {
            let mut per_shard: BTreeMap<u32, usize> = BTreeMap::new();
            for (k, (_, of)) in conditions.iter().enumerate() {
                if *of == r {
                    *per_shard.entry(shards[k]).or_default() += 1;
                }
            }
            let given = route.shards(count);
            assert!(per_shard.keys().all(|s| given.contains(s)), "{per_shard:?}");
            let counts: Vec<usize> = given
                .iter()
                .map(|s| per_shard.get(s).copied().unwrap_or(0))
                .collect();
            let (min, max) = (counts.iter().min(), counts.iter().max());
            assert!(
                max.zip(min).is_some_and(|(h, l)| h - l <= 1),
                "route {r} over {count}: {counts:?}"
            );
        }
    }
}

#[test]
fn the_partition_depends_on_each_route_s_conditions_alone() {
    let routes = [limited("a", 8), limited("b", 8)];
    let mut conditions = named("a", 40, 0);
    conditions.extend(named("b", 40, 1));
    let before = dealt(&conditions, &routes, 4);
    // Not on the order they come in.
    let mut reversed = conditions.clone();
    reversed.reverse();
    assert_eq!(dealt(&reversed, &routes, 4), before);
    // Not on another route's: a family added under route b moves nothing of route a.
    let mut grown = conditions.clone();
    grown.extend(named("b-new", 17, 1));
    let after = dealt(&grown, &routes, 4);
    for (c, shard) in &before {
        if c.starts_with("a-") {
            assert_eq!(after.get(c), Some(shard), "{c} moved");
        }
    }
    // Within route a, conditions ranked before the first added one keep their shard
    // (round-robin dealing shifts the ones after it: the module doc's trade-off).
    let mut grown = conditions.clone();
    let added = named("a-new", 5, 0);
    grown.extend(added.iter().cloned());
    let after = dealt(&grown, &routes, 4);
    let first_new = added.iter().map(|(c, _)| hash(c)).min().unwrap_or(u64::MAX);
    let mut kept = 0;
    for (c, shard) in &before {
        if c.starts_with("a-") && hash(c) < first_new {
            assert_eq!(after.get(c), Some(shard), "{c} moved");
            kept += 1;
        }
    }
    assert!(kept > 0, "the test adds after some old condition");
}

#[test]
fn a_condition_is_its_identity_without_arm_and_cap() {
    let fields = Fields::of(vec![
        ("cfg", "sim-x".into()),
        ("family", "f".into()),
        ("v", "8".into()),
        ("block", "b".into()),
        ("arm", "routed".into()),
        ("cap", "1024".into()),
        ("rep", "0".into()),
    ]);
    assert_eq!(
        condition(&fields),
        "cfg=sim-x, family=f, v=8, block=b, rep=0"
    );
}

fn smoke() -> crate::pipeline::Study {
    crate::pipeline::smoke_study().0
}

#[test]
fn the_shards_of_a_study_take_each_episode_once_with_its_condition_s_arms() {
    let study = smoke();
    let dag = &study.dag;
    let configs = &study.manifest.configurations;
    let executes: Vec<NodeIndex> = dag
        .nodes()
        .filter(|(_, n)| n.kind == NodeKind::Execute)
        .map(|(i, _)| i)
        .collect();
    for count in [1u32, 2, 3, 7] {
        let shards: Vec<Shard> = (0..count)
            .map(|i| Shard::new(dag, configs, spec(i, count)))
            .collect();
        let mut shard_of_condition: HashMap<String, u32> = HashMap::new();
        for &e in &executes {
            let holders: Vec<u32> = (0..count)
                .filter(|&i| shards[i as usize].executes(dag, e))
                .collect();
            assert_eq!(holders.len(), 1, "{} in {holders:?}", dag.graph[e].id());
            // Every arm of a condition is in the shard of its first arm.
            let held = *shard_of_condition
                .entry(condition(&dag.graph[e].fields))
                .or_insert(holders[0]);
            assert_eq!(held, holders[0], "{}", dag.graph[e].id());
        }
        assert_eq!(
            shard_of_condition.len() * 2,
            executes.len(),
            "two arms each"
        );
        // The simulated route is given to every shard, with all its slots.
        let sizes: Vec<usize> = shards.iter().map(|s| s.episodes().len()).collect();
        assert!(sizes.iter().all(|&s| s > 0), "{sizes:?}");
        assert!(shards.iter().all(|s| s.slots(&[4]) == [4]));
    }
}

#[test]
fn a_shard_takes_its_grades_and_compiles_and_publishes_nothing() {
    let study = smoke();
    let dag = &study.dag;
    let cache = study.cache().unwrap_or_else(|e| panic!("{e}"));
    let plan = study.plan(&cache).unwrap_or_else(|e| panic!("{e}"));
    let shard = Shard::new(dag, &study.manifest.configurations, spec(1, 3));
    let taken = selected(dag, &plan, &shard);
    let of_kind = |kind: NodeKind| taken.iter().filter(|&&i| dag.graph[i].kind == kind).count();
    assert_eq!(of_kind(NodeKind::Execute), shard.episodes().len());
    assert_eq!(of_kind(NodeKind::Grade), shard.episodes().len());
    assert_eq!(of_kind(NodeKind::Analysis) + of_kind(NodeKind::Table), 0);
    assert!(of_kind(NodeKind::Compile) > 0);
}
