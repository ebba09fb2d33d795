package checkpoint

const crashEnv = "TOOLSD_CHECKPOINT_CRASH"

func crashChild() {}
