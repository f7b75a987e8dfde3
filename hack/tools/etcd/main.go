// Command etcd is the etcd server built from the pinned go.etcd.io/etcd/server/v3.
// Debian's etcd (3.4) is too old for kube-apiserver 1.37.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
