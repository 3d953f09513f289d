package engine

// isStop is the stop rule: a reply ends, with Reason "eot", when the sampled
// id is one of the request's stop ids. The stop id is neither emitted as
// text nor kept in Result.IDs.
func isStop(id int, stops []int) bool {
	for _, s := range stops {
		if s == id {
			return true
		}
	}
	return false
}
