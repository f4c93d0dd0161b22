// The batch requests a model context executes.
extension ModelContext {
  /// Runs a batch insert in one transaction, with its history.
  public func execute<Entity: ManagedObject>(_ request: BatchInsertRequest<Entity>) throws -> BatchResult<Entity> {
    try state.execute(request)
  }

  /// Runs a batch update with one UPDATE statement, with its history.
  public func execute<Entity: ManagedObject>(_ request: BatchUpdateRequest<Entity>) throws -> BatchResult<Entity> {
    try state.execute(request)
  }

  /// Runs a batch delete with one DELETE statement, with its history.
  public func execute<Entity: ManagedObject>(_ request: BatchDeleteRequest<Entity>) throws -> BatchResult<Entity> {
    try state.execute(request)
  }
}
