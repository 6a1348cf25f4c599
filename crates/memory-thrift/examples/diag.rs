use memory_core::{Budget, CharTokenCounter, History, Message, count_messages};
use memory_thrift::Thrift;

fn kind(m: &Message) -> String {
    let t = m.text();
    let tag = if t.starts_with("[earlier tool result omitted") {
        "PH"
    } else if memory_thrift::cut::is_cut(&t) {
        "CUT"
    } else {
        ""
    };
    let k = match m {
        Message::System(_) => "sys",
        Message::User(_) => "user",
        Message::Assistant { .. } => "asst",
        Message::ToolResult { .. } => "tool",
    };
    format!("{k}{tag}({})", t.len())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let budget: usize = args[2].parse().unwrap();
    let verbose = args.len() > 3;
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&args[1]).unwrap()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut breaks = 0;
    for traj in v.as_array().unwrap() {
        let msgs = memory_core::openai::from_value(&traj["messages"]).unwrap();
        let counts = rt
            .block_on(count_messages(&CharTokenCounter, &msgs))
            .unwrap();
        let mut prev: Option<Vec<Message>> = None;
        for k in 0..msgs.len() {
            if !matches!(msgs[k], Message::Assistant { .. }) {
                continue;
            }
            let mut h = History::new(&msgs[..k], &counts[..k]).unwrap();
            if matches!(msgs[0], Message::System(_)) {
                h = h.protect(&[0]);
            }
            let (r, tr) = rt
                .block_on(Thrift::new().trim_traced(&h, &Budget::tokens(budget), &CharTokenCounter))
                .unwrap();
            let out = r.messages.clone();
            if let Some(p) = &prev {
                let is_prefix = p.len() <= out.len() && p.iter().zip(&out).all(|(a, b)| a == b);
                if !is_prefix {
                    breaks += 1;
                    let d = p
                        .iter()
                        .zip(&out)
                        .position(|(a, b)| a != b)
                        .unwrap_or(p.len().min(out.len()));
                    if verbose {
                        println!(
                            "turn {k}: break at {d}/{}: old {} new {} | total {} target {:?} | reas {:?} cut {:?} ph {:?} rnd {:?} steps {:?} newest {:?}",
                            p.len(),
                            p.get(d).map(kind).unwrap_or_default(),
                            out.get(d).map(kind).unwrap_or_default(),
                            h.total(),
                            tr.target,
                            tr.reasoning.before.count - tr.reasoning.after.count,
                            tr.tool_outputs_cut.before.count - tr.tool_outputs_cut.after.count,
                            tr.tool_results_replaced.before.count
                                - tr.tool_results_replaced.after.count,
                            tr.rounds_dropped.before.count - tr.rounds_dropped.after.count,
                            tr.steps_dropped.before.count - tr.steps_dropped.after.count,
                            tr.newest_outputs_cut.before.count - tr.newest_outputs_cut.after.count
                        );
                    }
                }
            }
            prev = Some(out);
        }
        if verbose {
            println!("---");
        }
    }
    println!("budget {budget}: breaks {breaks}");
}
