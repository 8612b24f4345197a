using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Polly;
using Polly.Retry;

namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>Typed work queues on a real host: handlers, scopes, retries, registry listing and settings.</summary>
public sealed class WorkQueueTests
{
    [Fact]
    public async Task TryEnqueue_BlockingHandler_RunsEachItemOnAWorkerInItsOwnScope()
    {
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(executor: o => o.WorkerCount = 2);
        using var _ = host;

        for (var i = 1; i <= 3; i++)
        {
            Assert.True(host.Queue().TryEnqueue(new Notice(i)));
        }

        probe.WaitHandled(3);
        Assert.Equal([1, 2, 3], probe.Handled.Order());
        Assert.All(probe.Attempts, a => Assert.True(a.OnWorker));
        Assert.Equal(3, probe.Attempts.Select(a => a.Scope).Distinct().Count());
        await host.StopAsync();
        Assert.Empty(deadLetters.Letters);
        Assert.Equal(3, host.Executor().GetStatistics().Completed);
    }

    [Fact]
    public async Task EnqueueAsync_AsyncHandler_IsHandledAndTheWorkerWaitsForIt()
    {
        var (host, probe, deadLetters) = WorkQueueHost.Start<AsyncNoticeHandler>();
        using var _ = host;

        await host.Queue().EnqueueAsync(new Notice(7));

        probe.WaitHandled(1);
        Assert.Equal([7], probe.Handled);
        await host.StopAsync();
        Assert.Empty(deadLetters.Letters);
    }

    [Fact]
    public async Task AddWorkQueue_ItsExecutorIsListedInTheRegistryByName()
    {
        var (host, _, _) = WorkQueueHost.Start<BlockingNoticeHandler>();
        using var __ = host;

        var registry = host.Services.GetRequiredService<IBoundedExecutorRegistry>();

        Assert.Contains("payments", registry.Names);
        Assert.Same(host.Executor(), registry.GetExecutor("payments"));
        Assert.Same(host.Queue(), host.Services.GetRequiredKeyedService<IWorkQueue<Notice>>("payments"));
        Assert.Equal("payments", host.Queue().Name);
        await host.StopAsync();
    }

    [Fact]
    public async Task FailingAttempts_AreRetriedOnWorkers_UntilTheItemIsHandled()
    {
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(o =>
        {
            o.RetryDelay = TimeSpan.FromMilliseconds(1);
            o.MaxRetryAttempts = 3;
        });
        using var _ = host;
        probe.Behaviour = (_, attempt, _) =>
        {
            if (attempt < 3)
            {
                throw new TimeoutException($"gateway down (attempt {attempt})");
            }
        };

        Assert.True(host.Queue().TryEnqueue(new Notice(1)));

        probe.WaitHandled(1);
        Assert.Equal([1, 2, 3], probe.Attempts.Select(a => a.Number));
        Assert.All(probe.Attempts, a => Assert.True(a.OnWorker));
        Assert.Equal(3, probe.Attempts.Select(a => a.Scope).Distinct().Count());
        await host.StopAsync();
        Assert.Empty(deadLetters.Letters);
    }

    [Fact]
    public async Task WorkItemContext_GivesTheHandlerAnIdThatRetriesKeep_AndTheAttemptNumber()
    {
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(o =>
        {
            o.RetryDelay = TimeSpan.FromMilliseconds(1);
            o.MaxRetryAttempts = 1;
        });
        using var _ = host;
        probe.Behaviour = (notice, attempt, _) =>
        {
            if (notice.Id == 2 || attempt == 1)
            {
                throw new TimeoutException("gateway down");
            }
        };
        var before = DateTimeOffset.UtcNow;

        Assert.True(host.Queue().TryEnqueue(new Notice(1)));
        Assert.True(host.Queue().TryEnqueue(new Notice(2)));

        probe.WaitHandled(1);
        var letter = Assert.Single(deadLetters.WaitFor(1));
        var first = probe.Attempts.Where(a => a.Id == 1).ToArray();
        var second = probe.Attempts.Where(a => a.Id == 2).ToArray();
        Assert.Equal([1, 2], first.Select(a => a.Context.Attempt));
        Assert.Single(first.Select(a => a.Context.ItemId).Distinct());
        Assert.Single(second.Select(a => a.Context.ItemId).Distinct());
        Assert.NotEqual(first[0].Context.ItemId, second[0].Context.ItemId);
        Assert.Equal(second[0].Context.ItemId, letter.ItemId);
        Assert.All(probe.Attempts, a =>
        {
            Assert.Equal("payments", a.Context.QueueName);
            Assert.False(a.Context.IsDurable);
            Assert.InRange(a.Context.EnqueuedAt, before, DateTimeOffset.UtcNow);
        });
        Assert.Null(letter.Payload);
        await host.StopAsync();
    }

    [Fact]
    public async Task Retry_WaitingForItsDelay_HoldsNoWorker()
    {
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(o =>
        {
            o.RetryDelay = TimeSpan.FromHours(1);
            o.MaxRetryDelay = TimeSpan.FromHours(1);
        });
        using var _ = host;
        var failure = new InvalidOperationException("first attempt fails");
        probe.Behaviour = (notice, _, _) =>
        {
            if (notice.Id == 1)
            {
                throw failure;
            }
        };

        Assert.True(host.Queue().TryEnqueue(new Notice(1)));
        Assert.True(host.Queue().TryEnqueue(new Notice(2)));

        // The only worker handles item 2 while item 1 waits an hour for its retry.
        probe.WaitHandled(1);
        Assert.Equal([2], probe.Handled);
        await host.StopAsync();

        // Stopping ends the wait: item 1 becomes a dead letter carrying the failure that caused it.
        var letter = Assert.Single(deadLetters.WaitFor(1));
        Assert.Equal(1, letter.Item.Id);
        Assert.Equal(DeadLetterReason.ShutDown, letter.Reason);
        Assert.Same(failure, letter.Exception);
        Assert.Equal(1, letter.Attempts);
    }

    [Fact]
    public async Task Retry_IsLoggedWithTheQueuesName()
    {
        var logs = new FakeLogCollector();
        var (host, probe, _) = WorkQueueHost.Start<BlockingNoticeHandler>(o => o.RetryDelay = TimeSpan.FromMilliseconds(1), logs: logs);
        using var _ = host;
        probe.Behaviour = (_, attempt, _) =>
        {
            if (attempt == 1)
            {
                throw new InvalidOperationException("flaky");
            }
        };

        host.Queue().TryEnqueue(new Notice(1));
        probe.WaitHandled(1);
        await host.StopAsync();

        var retry = Assert.Single(logs.WithEvent("RetryScheduled"));
        Assert.Equal(102, retry.Id.Id);
        Assert.Equal("payments", retry.GetStructuredStateValue("QueueName"));
        Assert.Equal("1", retry.GetStructuredStateValue("AttemptNumber"));
        Assert.Equal(LogLevel.Warning, retry.Level);
    }

    [Fact]
    public async Task AttemptTimeout_CancelsTheHandlersToken_AndTheAttemptIsRetried()
    {
        var logs = new FakeLogCollector();
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(
            o =>
            {
                o.AttemptTimeout = TimeSpan.FromMilliseconds(10);
                o.RetryDelay = TimeSpan.FromMilliseconds(1);
            },
            logs: logs);
        using var _ = host;
        probe.Behaviour = (_, attempt, token) =>
        {
            if (attempt == 1)
            {
                // A hung dependency that honours cancellation: only the timeout ends this wait.
                Assert.True(token.WaitHandle.WaitOne(TestHost.Patience), "The attempt timeout never cancelled the token.");
                token.ThrowIfCancellationRequested();
            }
        };

        host.Queue().TryEnqueue(new Notice(1));

        probe.WaitHandled(1);
        Assert.Equal([1, 2], probe.Attempts.Select(a => a.Number));
        await host.StopAsync();
        Assert.Empty(deadLetters.Letters);
        var timeout = Assert.Single(logs.WithEvent("ResilienceEvent"));
        Assert.Equal("OnTimeout", timeout.GetStructuredStateValue("ResilienceEvent"));
        Assert.Equal("payments", timeout.GetStructuredStateValue("QueueName"));
    }

    [Fact]
    public async Task ConfigurePipeline_GetsABuilderNamedAfterTheQueue_AndReplacesTheDefault()
    {
        string? builderName = null;
        string? operationKey = null;
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(o => o.ConfigurePipeline = builder =>
        {
            builderName = builder.Name;
            builder.AddRetry(new RetryStrategyOptions
            {
                MaxRetryAttempts = 1,
                Delay = TimeSpan.Zero,
                OnRetry = args =>
                {
                    operationKey = args.Context.OperationKey;
                    return default;
                },
            });
        });
        using var _ = host;
        probe.Behaviour = (_, _, _) => throw new InvalidOperationException("always");

        host.Queue().TryEnqueue(new Notice(5));

        var letter = Assert.Single(deadLetters.WaitFor(1));
        Assert.Equal("payments", builderName);
        Assert.Equal("payments", operationKey);
        Assert.Equal(2, letter.Attempts);
        Assert.Equal(DeadLetterReason.Failed, letter.Reason);
        await host.StopAsync();
    }

    [Fact]
    public async Task Pipeline_GivenByTheApplication_IsUsed()
    {
        var pipeline = new ResiliencePipelineBuilder().AddRetry(new RetryStrategyOptions { MaxRetryAttempts = 4, Delay = TimeSpan.Zero }).Build();
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(o => o.Pipeline = pipeline);
        using var _ = host;
        probe.Behaviour = (_, _, _) => throw new InvalidOperationException("always");

        host.Queue().TryEnqueue(new Notice(5));

        Assert.Equal(5, Assert.Single(deadLetters.WaitFor(1)).Attempts);
        await host.StopAsync();
    }

    [Fact]
    public async Task HandlersToken_IsNotCancelledWhileTheHostDrains_SoRunningAndQueuedItemsFinish()
    {
        using var gate = new Gate();
        var tokens = new System.Collections.Concurrent.ConcurrentDictionary<int, CancellationToken>();
        var cancelledWhenRun = new System.Collections.Concurrent.ConcurrentDictionary<int, bool>();
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(o => o.AttemptTimeout = Timeout.InfiniteTimeSpan);
        using var _ = host;
        probe.Behaviour = (notice, _, token) =>
        {
            tokens[notice.Id] = token;
            cancelledWhenRun[notice.Id] = token.IsCancellationRequested;
            if (notice.Id == 1)
            {
                gate.Item();
            }
        };
        Assert.True(host.Queue().TryEnqueue(new Notice(1)));
        gate.WaitStarted();
        Assert.True(host.Queue().TryEnqueue(new Notice(2)));

        var stopping = host.StopAsync();
        TestHost.WaitUntil(() => host.Executor().IsShutdown);

        // The drain has begun: the application's stopping token says so, the running handler's token does not.
        Assert.True(host.Services.GetRequiredService<IHostApplicationLifetime>().ApplicationStopping.IsCancellationRequested);
        Assert.False(tokens[1].IsCancellationRequested);
        gate.Open();
        await stopping.WaitAsync(TestHost.Patience);

        Assert.Equal([1, 2], probe.Handled);
        Assert.False(cancelledWhenRun[2]); // the queued item ran during the drain with a live token
        Assert.Empty(deadLetters.Letters);
    }

    [Fact]
    public async Task HandlersToken_IsCancelledAtTheShutdownDeadline_AndTheItemIsDeadLetteredAsShutDown()
    {
        using var started = new ManualResetEventSlim(false);
        var handlerToken = new CancellationToken(canceled: true);
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(o =>
        {
            o.AttemptTimeout = Timeout.InfiniteTimeSpan;
            o.MaxRetryAttempts = 0;
        });
        using var _ = host;
        using var deadline = new CancellationTokenSource();
        probe.Behaviour = (notice, _, token) =>
        {
            handlerToken = token;
            started.Set();

            // A handler that honours its token: only the deadline ends this wait.
            Assert.True(token.WaitHandle.WaitOne(TestHost.Patience), "The shutdown deadline never cancelled the handler's token.");
            token.ThrowIfCancellationRequested();
        };
        Assert.True(host.Queue().TryEnqueue(new Notice(1)));
        Assert.True(started.Wait(TestHost.Patience));

        var stopping = host.StopAsync(deadline.Token);
        TestHost.WaitUntil(() => host.Executor().IsShutdown);
        Assert.False(handlerToken.IsCancellationRequested);
        await deadline.CancelAsync();
        await stopping.WaitAsync(TestHost.Patience);

        var letter = Assert.Single(deadLetters.WaitFor(1));
        Assert.Equal(DeadLetterReason.ShutDown, letter.Reason);
        Assert.IsAssignableFrom<OperationCanceledException>(letter.Exception);
        Assert.Empty(probe.Handled);
    }

    [Fact]
    public void AddWorkQueue_InvalidSettings_ThrowsNamingEachSetting()
    {
        var services = new ServiceCollection();

        var thrown = Assert.Throws<ArgumentException>(() => services.AddWorkQueue<Notice, BlockingNoticeHandler>("payments", o =>
        {
            o.MaxRetryAttempts = -1;
            o.AttemptTimeout = TimeSpan.FromMilliseconds(1);
            o.RetryDelay = TimeSpan.FromSeconds(10);
            o.MaxRetryDelay = TimeSpan.FromSeconds(1);
        }));

        Assert.Contains("MaxRetryAttempts", thrown.Message, StringComparison.Ordinal);
        Assert.Contains("AttemptTimeout", thrown.Message, StringComparison.Ordinal);
        Assert.Contains("MaxRetryDelay", thrown.Message, StringComparison.Ordinal);
        Assert.Contains("'payments'", thrown.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void AddWorkQueue_TypeThatIsNoHandler_Throws()
    {
        var services = new ServiceCollection();

        var thrown = Assert.Throws<ArgumentException>(() => services.AddWorkQueue<Notice, ScopeMarker>("payments"));

        Assert.Contains("IBlockingWorkHandler<Notice>", thrown.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void AddWorkQueue_NameOfAnExistingExecutor_Throws()
    {
        var services = new ServiceCollection();
        services.AddBoundedExecutor("payments");

        Assert.Throws<InvalidOperationException>(() => services.AddWorkQueue<Notice, BlockingNoticeHandler>("payments"));
    }
}
