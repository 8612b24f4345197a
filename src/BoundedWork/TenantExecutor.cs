namespace BoundedWork;

/// <summary>
/// An executor seen by one tenant (<see cref="BoundedExecutor.ForTenant(string)"/>): what is submitted here counts
/// against the tenant's bounds and takes its turn by the tenant's weight. A small value; make one per submit or keep one.
/// </summary>
/// <remarks>
/// While the executor's <see cref="BoundedExecutorSettings.FairShare"/> is <see langword="null"/> (fair share off) the
/// tenant is ignored and these behave exactly as the executor's own methods.
/// </remarks>
public readonly struct TenantExecutor
{
    internal TenantExecutor(BoundedExecutor executor, string tenant)
    {
        Executor = executor;
        Tenant = tenant;
    }

    /// <summary>Gets the executor.</summary>
    public BoundedExecutor Executor { get; }

    /// <summary>Gets the tenant.</summary>
    public string Tenant { get; }

    /// <summary>Queues a fire-and-forget item for the tenant if there is room now, as <see cref="BoundedExecutor.TryExecute(Action)"/> does.</summary>
    /// <param name="action">The work to run on a worker thread.</param>
    /// <returns><see langword="true"/> if queued; <see langword="false"/> if refused (the queue is full, the tenant's bound is reached, or the executor is shut down; counted and reported).</returns>
    /// <exception cref="ArgumentNullException"><paramref name="action"/> is <see langword="null"/>.</exception>
    public bool TryExecute(Action action)
    {
        ArgumentNullException.ThrowIfNull(action);
        return Executor.TryExecuteForTenant(Tenant, action, null, Internal.QueuedItem.InvokeAction);
    }

    /// <summary>Queues a fire-and-forget item with its state for the tenant if there is room now.</summary>
    /// <typeparam name="TState">The state's type.</typeparam>
    /// <param name="action">The work to run on a worker thread.</param>
    /// <param name="state">The argument passed to <paramref name="action"/>.</param>
    /// <returns><see langword="true"/> if queued; otherwise <see langword="false"/>.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="action"/> is <see langword="null"/>.</exception>
    public bool TryExecute<TState>(Action<TState> action, TState state)
    {
        ArgumentNullException.ThrowIfNull(action);
        return Executor.TryExecuteForTenant(Tenant, action, state, Internal.StateInvoker<TState>.Instance);
    }

    /// <summary>Queues a fire-and-forget item for the tenant, applying the rejection policy, as <see cref="BoundedExecutor.Execute(Action, CancellationToken)"/> does.</summary>
    /// <param name="action">The work to run on a worker thread.</param>
    /// <param name="cancellationToken">Stops a Wait-policy wait for room.</param>
    /// <exception cref="ArgumentNullException"><paramref name="action"/> is <see langword="null"/>.</exception>
    /// <exception cref="RejectedExecutionException">The item was refused (the policy, the tenant's bound or shutdown).</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled while waiting for room.</exception>
    public void Execute(Action action, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(action);
        Executor.ExecuteForTenant(Tenant, action, null, Internal.QueuedItem.InvokeAction, cancellationToken);
    }

    /// <summary>Queues a fire-and-forget item with its state for the tenant, applying the rejection policy.</summary>
    /// <typeparam name="TState">The state's type.</typeparam>
    /// <param name="action">The work to run on a worker thread.</param>
    /// <param name="state">The argument passed to <paramref name="action"/>.</param>
    /// <param name="cancellationToken">Stops a Wait-policy wait for room.</param>
    /// <exception cref="ArgumentNullException"><paramref name="action"/> is <see langword="null"/>.</exception>
    /// <exception cref="RejectedExecutionException">The item was refused (the policy, the tenant's bound or shutdown).</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled while waiting for room.</exception>
    public void Execute<TState>(Action<TState> action, TState state, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(action);
        Executor.ExecuteForTenant(Tenant, action, state, Internal.StateInvoker<TState>.Instance, cancellationToken);
    }

    /// <summary>Queues a fire-and-forget item with its state for the tenant; the Wait policy waits asynchronously.</summary>
    /// <typeparam name="TState">The state's type.</typeparam>
    /// <param name="action">The work to run on a worker thread.</param>
    /// <param name="state">The argument passed to <paramref name="action"/>.</param>
    /// <param name="cancellationToken">Stops a Wait-policy wait for room.</param>
    /// <returns>A task that completes when the item is queued (or handled by the policy).</returns>
    /// <exception cref="ArgumentNullException"><paramref name="action"/> is <see langword="null"/>.</exception>
    public ValueTask ExecuteAsync<TState>(Action<TState> action, TState state, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(action);
        return Executor.ExecuteForTenantAsync(Tenant, action, state, Internal.StateInvoker<TState>.Instance, cancellationToken);
    }

    /// <summary>Queues a fire-and-forget item for the tenant; the Wait policy waits asynchronously.</summary>
    /// <param name="action">The work to run on a worker thread.</param>
    /// <param name="cancellationToken">Stops a Wait-policy wait for room.</param>
    /// <returns>A task that completes when the item is queued (or handled by the policy).</returns>
    /// <exception cref="ArgumentNullException"><paramref name="action"/> is <see langword="null"/>.</exception>
    public ValueTask ExecuteAsync(Action action, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(action);
        return Executor.ExecuteForTenantAsync(Tenant, action, null, Internal.QueuedItem.InvokeAction, cancellationToken);
    }

    /// <summary>Runs a blocking delegate for the tenant and lets the caller await it, as <see cref="BoundedExecutor.RunAsync(Action, CancellationToken)"/> does.</summary>
    /// <param name="action">The blocking work.</param>
    /// <param name="cancellationToken">Cancels the item if it has not started yet.</param>
    /// <returns>A task that completes when the item has run.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="action"/> is <see langword="null"/>.</exception>
    public Task RunAsync(Action action, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(action);
        return Executor.RunForTenant<object?>(Tenant, action, cancellationToken);
    }

    /// <summary>Runs a blocking function for the tenant and lets the caller await its result.</summary>
    /// <typeparam name="TResult">The function's result type.</typeparam>
    /// <param name="function">The blocking work.</param>
    /// <param name="cancellationToken">Cancels the item if it has not started yet.</param>
    /// <returns>A task with the function's result.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="function"/> is <see langword="null"/>.</exception>
    public Task<TResult> RunAsync<TResult>(Func<TResult> function, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(function);
        return Executor.RunForTenant<TResult>(Tenant, function, cancellationToken);
    }
}
