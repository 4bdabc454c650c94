-- Backups of the PostgreSQL cluster this database lives in, recorded by deploy/pgbackrest/backup.sh
-- after pgBackRest reports success: the services' /metrics turn the latest into
-- ep_backup_age_seconds (docs/operations.md#backups). A restore to a time before a backup
-- brings back the table as it was then, so the age says that a fresh backup is due.
CREATE TABLE public.backups (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    stanza      text NOT NULL,
    label       text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('full', 'diff', 'incr')),
    finished_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE public.backups IS 'pgBackRest backups of this database''s PostgreSQL cluster, one row per successful backup (deploy/pgbackrest/backup.sh).';
COMMENT ON COLUMN public.backups.id IS 'Row id, increasing in backup order.';
COMMENT ON COLUMN public.backups.stanza IS 'pgBackRest stanza (the PostgreSQL cluster backed up).';
COMMENT ON COLUMN public.backups.label IS 'pgBackRest backup label, as `pgbackrest info` lists it.';
COMMENT ON COLUMN public.backups.kind IS 'full, diff (changes since the last full) or incr (since the last backup).';
COMMENT ON COLUMN public.backups.finished_at IS 'When the backup was recorded, just after pgBackRest finished it.';
CREATE INDEX backups_finished ON public.backups (finished_at);
