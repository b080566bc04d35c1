"""Runtime host, recorder, tasks, execution contexts, snapshots, message log, live sockets,
replay and token statistics (PRD §4.6, US-02/04/05/08/11)."""
