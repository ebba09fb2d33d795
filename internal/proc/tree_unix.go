//go:build unix

package proc

// below returns every process below root in children (each pid's children), breadth first.
func below(children map[int][]procRef, root int) []procRef {
	var out []procRef
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}
