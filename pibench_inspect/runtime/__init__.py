"""What keeps a run bounded and loud, whatever its inputs do: blocking work in daemon worker
threads with deadlines (workers), and the hook that makes a run that lost samples exit non-zero
(run_check); and what a run's start-up does to start fast (startup)."""
