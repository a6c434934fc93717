"""Multi-turn agents with tools: the text-environment contract (`env`), the one-program
multi-turn rollout (`rollout`) and the tool environments (`calculator`)."""
