namespace BoundedWork.Hosting.Internal;

/// <summary>One typed work queue as registered: its name, validated settings, handler, and storage.</summary>
internal sealed class WorkQueueRegistration<T>(string name, WorkQueueOptions<T> options, Action<IServiceProvider, T, CancellationToken> handle, string handlerName = "handler")
{
    public string Name { get; } = name;

    /// <summary>Gets the handler's type name (namespace-qualified), for the items' descriptions (<see cref="IDescribedWork"/>).</summary>
    public string HandlerName { get; } = handlerName;

    public WorkQueueOptions<T> Options { get; } = options;

    /// <summary>Gets the handler call: resolves the handler from the attempt's scope and runs it on the current (worker) thread.</summary>
    public Action<IServiceProvider, T, CancellationToken> Handle { get; } = handle;

    /// <summary>Gets or sets the factory of a durable queue that replaces the in-memory one; <see langword="null"/> for in memory.</summary>
    public Func<IServiceProvider, WorkQueueStorageContext<T>, IWorkQueueStorage<T>>? Storage { get; set; }
}

/// <summary>A typed work queue as the host drives it: the producer side plus its lifecycle.</summary>
internal interface IWorkQueueRuntime<T>
{
    /// <summary>Gets the queue producers are given: the in-memory queue itself, or the storage.</summary>
    IWorkQueue<T> Queue { get; }

    /// <summary>Creates (and, for durable storage, connects and migrates) what the queue needs; a failure fails the host's start.</summary>
    Task StartAsync(CancellationToken cancellationToken);

    /// <summary>Called before the executors stop: a durable queue stops claiming new items.</summary>
    Task StoppingAsync(CancellationToken cancellationToken);

    /// <summary>Called after every executor has stopped: finishes what is still in flight, or gives up when the token fires.</summary>
    Task StoppedAsync(CancellationToken cancellationToken);
}

/// <summary>A durable queue's storage as the host drives it.</summary>
internal sealed class StorageRuntime<T>(IWorkQueueStorage<T> storage) : IWorkQueueRuntime<T>, IDisposable
{
    /// <summary>The container disposes what it created: the storage too, through this.</summary>
    public void Dispose() => (storage as IDisposable)?.Dispose();

    public IWorkQueue<T> Queue => storage;

    public Task StartAsync(CancellationToken cancellationToken) => storage.StartAsync(cancellationToken);

    public Task StoppingAsync(CancellationToken cancellationToken) => storage.StoppingAsync(cancellationToken);

    public Task StoppedAsync(CancellationToken cancellationToken) => storage.StoppedAsync(cancellationToken);
}
