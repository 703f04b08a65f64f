//go:build linux

package sysmem

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// probe reads MemTotal from /proc/meminfo and lowers it to the cgroup v2
// (memory.max) or v1 (memory.limit_in_bytes) limit of this process's
// cgroup when that is smaller.
func probe() int64 {
	t := memTotal()
	if l := cgroupLimit(); l > 0 && (t == 0 || l < t) {
		t = l
	}
	return t
}

func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "MemTotal:"); ok {
			if fields := strings.Fields(rest); len(fields) > 0 {
				if kb, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}

// cgroupLimit is the memory limit of the cgroup this process is in, 0 when
// there is none ("max") or it cannot be read.
func cgroupLimit() int64 {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		// "hierarchy-ID:controllers:path"; v2 is "0::/path".
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var file string
		switch {
		case parts[0] == "0" && parts[1] == "":
			file = "/sys/fs/cgroup" + parts[2] + "/memory.max"
		case strings.Contains(","+parts[1]+",", ",memory,"):
			file = "/sys/fs/cgroup/memory" + parts[2] + "/memory.limit_in_bytes"
		default:
			continue
		}
		if v := readLimit(file); v > 0 {
			return v
		}
		// Inside a container the cgroup path is often not mounted under
		// its own name: the container's root is its cgroup.
		if v := readLimit(strings.Replace(file, parts[2], "", 1)); v > 0 {
			return v
		}
	}
	return 0
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
