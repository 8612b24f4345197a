using PaymentCallbacks.Server;

namespace PaymentCallbacks.Tests;

/// <summary>
/// A dependency whose calls block until the test opens the gate, and that signals each call's start and end, so
/// tests know exactly how many side effects are running or done without guessing at time. Its wait handles are
/// never disposed: a side effect still queued when a test ends may reach them afterwards.
/// </summary>
internal sealed class GatedDependency : IPaymentDependency
{
    private readonly ManualResetEventSlim _gate = new();
    private readonly SemaphoreSlim _started = new(0);
    private readonly SemaphoreSlim _finished = new(0);

    public void Call(PaymentCallback callback)
    {
        _started.Release();
        _gate.Wait();
        _finished.Release();
    }

    public void Open() => _gate.Set();

    public Task WaitStartedAsync(int count) => WaitAsync(_started, count);

    public Task WaitFinishedAsync(int count) => WaitAsync(_finished, count);

    private static async Task WaitAsync(SemaphoreSlim semaphore, int count)
    {
        for (var i = 0; i < count; i++)
        {
            Assert.True(await semaphore.WaitAsync(TestServer.Safety), "A side effect did not start or finish within the safety limit.");
        }
    }
}
