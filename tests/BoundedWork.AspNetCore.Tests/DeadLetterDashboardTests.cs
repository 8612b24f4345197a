using System.Collections.Concurrent;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Playwright;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>The dashboard's dead-letter section in a real browser, over a stand-in durable queue.</summary>
public sealed class DeadLetterDashboardTests
{
    [Fact]
    public async Task Dashboard_ListsADurableQueuesDeadLetters_AndRequeuesOrPurgesThem()
    {
        var store = new StandInDeadLetters();
        await using var server = await AdminServer.StartAsync(executors: services =>
        {
            services.AddBoundedExecutor("payments", o => o.WorkerCount = 2);
            services.AddBoundedExecutor("mail", o => o.WorkerCount = 1);
            services.AddSingleton<IWorkQueueStorage>(store);
            services.AddSingleton<IDeadLetterStore>(store);
        });
        await using var browser = await DashboardBrowserTests.LaunchAsync();
        var context = await browser.NewContextAsync(new() { ExtraHTTPHeaders = new Dictionary<string, string> { ["X-Test-User"] = "alice", ["X-Test-Roles"] = "ops" } });
        var page = await context.NewPageAsync();
        var errors = new ConcurrentQueue<string>();
        page.Console += (_, message) =>
        {
            if (message.Type == "error")
            {
                errors.Enqueue(message.Text);
            }
        };
        page.Dialog += (_, dialog) => dialog.AcceptAsync();
        await page.GotoAsync(new Uri(server.BaseAddress, "bounded-work/").ToString());
        var patience = new LocatorAssertionsToContainTextOptions { Timeout = (float)TestKit.Safety.TotalMilliseconds };
        var section = page.Locator("#dead-letters");

        // Only the durable queue is offered; its dead letters are listed with their last error.
        await Assertions.Expect(page.Locator("#dead-letters tr[data-item='7']")).ToContainTextAsync("provider down", patience);
        await Assertions.Expect(page.Locator("#dl-queue option")).ToHaveCountAsync(1);
        await Assertions.Expect(section.Locator("tr[data-item]")).ToHaveCountAsync(2);

        await section.Locator("tr[data-item='7'] button.dl-requeue").ClickAsync();
        await Assertions.Expect(page.Locator("#dl-msg")).ToContainTextAsync("Requeued item 7 (1)", patience);
        await section.Locator("#dl-purge-all").ClickAsync();
        await Assertions.Expect(page.Locator("#dl-msg")).ToContainTextAsync("Purged every dead letter of payments (1)", patience);

        Assert.Equal([7L], Assert.Single(store.Requeued).ItemIds);
        var purged = Assert.Single(store.Purged);
        Assert.Null(purged.ItemIds);
        Assert.Empty(errors);
        Assert.Single(server.Logs.WithEvent("DeadLettersRequeued"));
        Assert.Single(server.Logs.WithEvent("DeadLettersPurged"));
    }

    /// <summary>A durable queue "payments" as the console sees it: its storage statistics and two dead letters.</summary>
    private sealed class StandInDeadLetters : IWorkQueueStorage, IDeadLetterStore
    {
        public string QueueName => "payments";

        public string StorageKind => "PostgreSql";

        public WorkQueueStorageStatistics Statistics { get; } = new() { DeadLettered = 2, IsAvailable = true, ReadAt = DateTimeOffset.UtcNow };

        public ConcurrentQueue<DeadLetterSelection> Requeued { get; } = new();

        public ConcurrentQueue<DeadLetterSelection> Purged { get; } = new();

        public Task<DeadLetterPage> ListDeadLettersAsync(DeadLetterQuery query, CancellationToken cancellationToken = default) =>
            Task.FromResult(new DeadLetterPage(
            [
                new StoredDeadLetter { ItemId = 7, Attempts = 4, LastError = "Failed: System.Net.Http.HttpRequestException: provider down", EnqueuedAt = DateTimeOffset.UtcNow.AddMinutes(-3), DeadAt = DateTimeOffset.UtcNow.AddMinutes(-1) },
                new StoredDeadLetter { ItemId = 5, Attempts = 4, LastError = "Failed: System.TimeoutException: too slow", EnqueuedAt = DateTimeOffset.UtcNow.AddMinutes(-4), DeadAt = DateTimeOffset.UtcNow.AddMinutes(-2) },
            ], null));

        public Task<StoredDeadLetter?> GetDeadLetterAsync(long itemId, int maxPayloadLength, CancellationToken cancellationToken = default) =>
            Task.FromResult<StoredDeadLetter?>(null);

        public Task<int> RequeueDeadLettersAsync(DeadLetterSelection selection, CancellationToken cancellationToken = default)
        {
            Requeued.Enqueue(selection);
            return Task.FromResult(1);
        }

        public Task<int> PurgeDeadLettersAsync(DeadLetterSelection selection, CancellationToken cancellationToken = default)
        {
            Purged.Enqueue(selection);
            return Task.FromResult(1);
        }
    }
}
