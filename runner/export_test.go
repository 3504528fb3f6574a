package runner

// WaitRemovals waits for the removals d's runs left in the background, so
// that a test can look for what they left.
func WaitRemovals(d *Docker) { d.removals.Wait() }
