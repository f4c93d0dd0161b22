import Dispatch

/// The serial executor of one context: a dispatch queue.
///
/// `enqueue` always hands the job to the queue asynchronously. A blocking enqueue would
/// deadlock two actors that call each other while sharing contexts' executors.
final class ContextExecutor: SerialExecutor {
  let queue: DispatchQueue
  private let key = DispatchSpecificKey<Bool>()

  init(label: String) {
    queue = DispatchQueue(label: label)
    queue.setSpecific(key: key, value: true)
  }

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    let executor = asUnownedSerialExecutor()
    queue.async { job.runSynchronously(on: executor) }
  }

  /// Whether the calling thread is running this executor's queue.
  var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }

  func checkIsolated() {
    precondition(isCurrent, "not on the context's executor")
  }
}
