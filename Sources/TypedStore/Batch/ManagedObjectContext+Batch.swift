// The batch requests a context executes: Batch adds them to the type Context declares.
extension ManagedObjectContext {
  /// Inserts the request's rows in one transaction, with its history, without registering
  /// objects.
  ///
  /// ```swift
  /// let result = try context.execute(BatchInsertRequest<Note>(count: 1_000) { i, note in note.title = "\(i)" })
  /// ```
  ///
  /// - Throws: `BatchError` before anything is written for a request that cannot run, or the
  ///   store's error (nothing written).
  public func execute<Entity: ManagedObject>(_ request: BatchInsertRequest<Entity>) throws -> BatchResult<Entity> {
    try state.execute(request)
  }

  /// Sets the request's attributes on its rows with one UPDATE statement, with its history.
  /// Registered objects are not changed: merge the result's changes to see them.
  ///
  /// ```swift
  /// var request = BatchUpdateRequest<Note>(objectIDs: ids)
  /// request.propertiesToUpdate = [.set(\.title, "Updated")]
  /// let result = try context.execute(request)
  /// ```
  ///
  /// - Throws: ``BatchError`` before anything is written for a request that cannot run, or the
  ///   store's error (nothing written).
  public func execute<Entity: ManagedObject>(_ request: BatchUpdateRequest<Entity>) throws -> BatchResult<Entity> {
    try state.execute(request)
  }

  /// Deletes the request's rows with one DELETE statement, with their history and tombstones.
  ///
  /// ```swift
  /// let empty = try context.execute(BatchDeleteRequest<Note>(predicate: #Predicate { $0.title == "" }))
  /// ```
  ///
  /// - Throws: ``BatchError`` before anything is written for a request that cannot run, or the
  ///   store's error (nothing written).
  public func execute<Entity: ManagedObject>(_ request: BatchDeleteRequest<Entity>) throws -> BatchResult<Entity> {
    try state.execute(request)
  }
}
