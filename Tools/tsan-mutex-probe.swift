// Why Tools/tsan-suppressions.txt exists: ThreadSanitizer does not see Synchronization.Mutex on
// Linux (it waits with the futex system call, which TSan does not intercept). Two threads touch
// a counter only inside Mutex.withLock; TSan reports a race, and the count is still exact.
//
//   swiftc -sanitize=thread -O Tools/tsan-mutex-probe.swift -o /tmp/probe && /tmp/probe
//   # WARNING: ThreadSanitizer: Swift access race ...
//   # 200000
import Dispatch
import Synchronization

final class Counter { var value = 0 }
final class Shared: Sendable { let counter = Mutex(Counter()) }

let shared = Shared()
let group = DispatchGroup()
for _ in 0..<2 {
  DispatchQueue.global().async(group: group) {
    for _ in 0..<100_000 { shared.counter.withLock { $0.value += 1 } }
  }
}
group.wait()
print(shared.counter.withLock { $0.value })
