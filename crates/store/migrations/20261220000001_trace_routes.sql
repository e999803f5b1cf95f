-- Switchboard schema v5: the scheduler's routing decision stored with each trace (JSON: candidates,
-- each layer's verdict, scores, the chosen upstream and why), and how many attempts failed before it.
ALTER TABLE traces ADD COLUMN route TEXT;
ALTER TABLE traces ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
