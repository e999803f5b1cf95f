//! The labelled diagnosis evaluation (`switchboard_servers::eval`, printed by `switchboard diagnose --eval`) and
//! the plan of the example: the overheated neutral lug of wm01.

use switchboard_servers::{
    eval,
    knowledge::{KnowledgeBase, KnowledgeServer},
    reasoning::synth::{self, KnowledgeInput, VisionInput, step_section},
    vision::{AnalyzeOptions, Equipment, analyze},
};

use crate::common::{data_dir, sample};

#[tokio::test]
async fn the_labelled_set_is_scored_and_plans_stay_on_the_component() {
    let cases = eval::cases().unwrap();
    assert!(cases.len() >= 30, "{} cases", cases.len());
    assert!(cases.iter().filter(|c| c.image.is_some()).count() >= 10, "real images in the set");
    let report = eval::run(&cases, KnowledgeBase::embedded().await.unwrap(), &data_dir()).await;
    println!("{}", report.render());
    assert_eq!(report.failed, 0, "{}", report.render());
    assert!(report.plan_precision >= 0.9, "plan precision {:.3}", report.plan_precision);
    assert!(report.recall_at_3 >= 0.8, "recall@3 {:.3}", report.recall_at_3);
    assert!(report.precision_at_3 >= 0.8, "precision@3 {:.3}", report.precision_at_3);
    assert!(report.criteria_accuracy >= 0.9, "criteria accuracy {:.3}", report.criteria_accuracy);
}

/// The example: `diagnose wm01 --equipment panel` used to end with battery strings, intercell
/// connectors, UPS bypass and contactor terminals.
#[tokio::test]
async fn the_wm01_plan_has_no_battery_ups_intercell_capacitor_or_contactor_steps() {
    let opts = AnalyzeOptions { equipment: Some(Equipment::Panel), ..AnalyzeOptions::default() };
    let vision = serde_json::to_value(analyze(&sample("wm01_200_deg_neutral.jpg"), &opts).unwrap()).unwrap();
    let kb = KnowledgeServer::new(KnowledgeBase::embedded().await.unwrap());
    let knowledge = kb.search_manual(eval::knowledge_args(&vision)).await.unwrap();
    let knowledge = serde_json::to_value(knowledge).unwrap();
    let v: VisionInput = serde_json::from_value(vision.clone()).unwrap();
    let k: KnowledgeInput = serde_json::from_value(knowledge).unwrap();
    let plan = synth::synthesize(&v, &k, None);
    assert_eq!(plan.severity.band.as_deref(), Some("major"));
    assert!(plan.steps.len() >= 4, "{:#?}", plan.steps);
    for step in &plan.steps {
        let words = synth::words(step);
        for banned in
            ["battery", "batteries", "ups", "intercell", "capacitor", "capacitors", "contactor", "contactors"]
        {
            assert!(!words.iter().any(|w| w == banned), "step mentions {banned}: {step}");
        }
        assert!(step_section(step).is_some(), "step names no source section: {step}");
    }
    assert!(!plan.safety.iter().any(|s| s.to_lowercase().contains("hydrogen")), "{:?}", plan.safety);
    assert!(
        plan.step_sources.iter().all(|s| s.group == "termination" || s.group == "survey-method"),
        "{:?}",
        plan.step_sources
    );
    println!("wm01 plan:\n{}", plan.steps.join("\n"));
}
