using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>
/// A dead-letter handler that puts its item back into its own queue, which refuses it: the refusal must not come back
/// to the handler (before, that recursed until the stack overflowed and the process died). The handler here stops by
/// itself after <see cref="RequeueingDeadLetters.MaxCalls"/> calls, so the old behaviour fails the test instead of
/// killing the test host.
/// </summary>
public sealed class DeadLetterLoopTests
{
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task DeadLetterHandlerRequeueingAfterShutdown_GetsTheLetterOnce_AndTheRefusedCopyIsLogged(bool yieldFirst)
    {
        var logs = new FakeLogCollector();
        var builder = TestHost.CreateBuilder(logs);
        var requeue = new RequeueingDeadLetters(yieldFirst);
        builder.Services.AddSingleton(new Probe());
        builder.Services.AddScoped<ScopeMarker>();
        builder.Services.AddSingleton<IDeadLetterHandler<Notice>>(requeue);
        builder.Services.AddWorkQueue<Notice, BlockingNoticeHandler>("payments").Configure(o => o.WorkerCount = 1);
        using var host = builder.Build();
        requeue.Queue = host.Queue();
        await host.StartAsync();
        await host.StopAsync();

        Assert.False(host.Queue().TryEnqueue(new Notice(1)));

        TestHost.WaitUntil(() => logs.WithEvent("DeadLetterNotRedelivered").Count > 0 || requeue.Calls >= RequeueingDeadLetters.MaxCalls);
        Assert.Equal(1, requeue.Calls);
        Assert.Equal(1, requeue.MaxDepth);
        Assert.Equal([false], requeue.Requeued);
        var logged = Assert.Single(logs.WithEvent("DeadLetterNotRedelivered"));
        Assert.Equal(LogLevel.Error, logged.Level);
        Assert.Equal(new Notice(1).ToString(), logged.GetStructuredStateValue("Item"));
        Assert.Equal(DeadLetterReason.ShutDown.ToString(), logged.GetStructuredStateValue("Reason"));
    }

    [Fact]
    public async Task ItemRequeuedByADeadLetterHandler_ThatFailsLater_IsDeliveredToTheHandlersAgain()
    {
        var builder = TestHost.CreateBuilder();
        var probe = new Probe { Behaviour = (_, _, _) => throw new InvalidOperationException("declined") };
        var requeue = new RequeueingDeadLetters(yieldFirst: false) { Limit = 2 };
        builder.Services.AddSingleton(probe);
        builder.Services.AddScoped<ScopeMarker>();
        builder.Services.AddSingleton<IDeadLetterHandler<Notice>>(requeue);
        builder.Services.AddWorkQueue<Notice, BlockingNoticeHandler>("payments", o => o.MaxRetryAttempts = 0).Configure(o => o.WorkerCount = 1);
        using var host = builder.Build();
        requeue.Queue = host.Queue();
        await host.StartAsync();

        // Accepted, run and failed again: a new dead letter of its own, not a refusal made inside the handler.
        Assert.True(host.Queue().TryEnqueue(new Notice(1)));

        TestHost.WaitUntil(() => requeue.Calls == 3);
        Assert.Equal([true, true], requeue.Requeued);
        await host.StopAsync();
        Assert.Equal(3, requeue.Calls);
    }

    /// <summary>Puts every dead letter's item back into the queue, up to <see cref="Limit"/> times.</summary>
    private sealed class RequeueingDeadLetters(bool yieldFirst) : IDeadLetterHandler<Notice>
    {
        public const int MaxCalls = 50;

        private readonly System.Collections.Concurrent.ConcurrentQueue<bool> _requeued = new();
        private int _calls;
        private int _depth;
        private int _maxDepth;

        public IWorkQueue<Notice>? Queue { get; set; }

        public int Limit { get; init; } = MaxCalls;

        public int Calls => Volatile.Read(ref _calls);

        public int MaxDepth => Volatile.Read(ref _maxDepth);

        public IReadOnlyList<bool> Requeued => [.. _requeued];

        public async ValueTask HandleAsync(DeadLetter<Notice> deadLetter, CancellationToken cancellationToken)
        {
            var calls = Interlocked.Increment(ref _calls);
            var depth = Interlocked.Increment(ref _depth);
            InterlockedMax(ref _maxDepth, depth);
            try
            {
                if (yieldFirst)
                {
                    await Task.Yield();
                }

                if (calls <= Limit)
                {
                    _requeued.Enqueue(Queue!.TryEnqueue(deadLetter.Item));
                }
            }
            finally
            {
                Interlocked.Decrement(ref _depth);
            }
        }

        private static void InterlockedMax(ref int location, int value)
        {
            var current = Volatile.Read(ref location);
            while (value > current && Interlocked.CompareExchange(ref location, value, current) is var seen && seen != current)
            {
                current = seen;
            }
        }
    }
}
