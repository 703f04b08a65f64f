//go:build linux

package sysmem

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// probe reads MemTotal and MemAvailable from /proc/meminfo and lowers them
// to the cgroup v2 (memory.max, memory.current) or v1
// (memory.limit_in_bytes, memory.usage_in_bytes) limit of this process's
// cgroup when that is smaller.
func probe() (total, available int64) {
	t, a := meminfo()
	if l, used := cgroupLimit(); l > 0 && (t == 0 || l < t) {
		t = l
		if free := l - used; used > 0 && (a == 0 || free < a) {
			a = max(free, 0)
		}
	}
	return t, a
}

// meminfo reads MemTotal and MemAvailable (bytes, 0 if unknown).
func meminfo() (total, available int64) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	field := func(rest string) int64 {
		if fields := strings.Fields(rest); len(fields) > 0 {
			if kb, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
				return kb << 10
			}
		}
		return 0
	}
	for s.Scan() {
		line := s.Text()
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			total = field(rest)
		} else if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			available = field(rest)
		}
	}
	return total, available
}

// cgroupLimit is the memory limit of the cgroup this process is in and
// what the cgroup uses now, 0 when there is no limit ("max") or it cannot
// be read.
func cgroupLimit() (limit, used int64) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		// "hierarchy-ID:controllers:path"; v2 is "0::/path".
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir, limitFile, usageFile string
		switch {
		case parts[0] == "0" && parts[1] == "":
			dir, limitFile, usageFile = "/sys/fs/cgroup", "memory.max", "memory.current"
		case strings.Contains(","+parts[1]+",", ",memory,"):
			dir, limitFile, usageFile = "/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes"
		default:
			continue
		}
		// Inside a container the cgroup path is often not mounted under
		// its own name: the container's root is its cgroup.
		for _, d := range []string{dir + parts[2], dir} {
			if v := readLimit(d + "/" + limitFile); v > 0 {
				return v, readLimit(d + "/" + usageFile)
			}
		}
	}
	return 0, 0
}

func readLimit(file string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0
	}
	v, err := strconv.ParseInt(s, 10, 64)
	// cgroup v1 reports "no limit" as a huge page-rounded number.
	if err != nil || v <= 0 || v >= 1<<62 {
		return 0
	}
	return v
}
