using BoundedWork;
using BoundedWork.Hosting;
using BoundedWork.Synchronous;
using BoundedWork.TypedQueues;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

// Typed queues and legacy code: a synchronous repository called through the legacy-sync adapter, and a typed
// payment-notice queue with retries, per-order ordering and a dead-letter handler. It runs for a few seconds and exits.
// Run with: dotnet run --project samples/BoundedWork.TypedQueues
const int Notices = 20;

var builder = Host.CreateApplicationBuilder(args);
builder.Logging.SetMinimumLevel(LogLevel.Warning);
builder.Services.AddSingleton<Outcomes>();

// 1. A legacy synchronous repository, moved as a whole onto its own executor.
builder.Services.AddBoundedExecutor("legacy", o => o.WorkerCount = 2);
builder.Services.AddScoped<IProductRepository, LegacyProductRepository>();
builder.Services.AddBlockingService<IProductRepository>("legacy");

// 2. A typed queue of payment notices: a blocking handler, retries with backoff, one order at a time.
builder.Services.AddWorkQueue<PaymentNotice, PaymentNoticeHandler>("payments", o =>
{
    o.MaxRetryAttempts = 2;
    o.RetryDelay = TimeSpan.FromMilliseconds(100);
    o.AttemptTimeout = TimeSpan.FromSeconds(5);
    o.OrderingKey = notice => notice.OrderId;
}).Configure(o =>
{
    o.WorkerCount = 4;
    o.QueueCapacity = 100;
});
builder.Services.AddSingleton<IDeadLetterHandler<PaymentNotice>, ConsoleDeadLetters>();

using var host = builder.Build();
await host.StartAsync();

// Async callers await the legacy repository; its blocking calls run on the "legacy" executor's threads.
await using (var scope = host.Services.CreateAsyncScope())
{
    var products = scope.ServiceProvider.GetRequiredService<BlockingService<IProductRepository>>();
    var product = await products.RunAsync(static (repository, id) => repository.Get(id), 42);
    Console.WriteLine($"async caller got:  {product}");

    // A synchronous caller (say, a legacy controller) submits and waits; on a ThreadPool thread that wait is counted.
    var other = await Task.Run(() => products.RunAndWait(repository => repository.Get(7)));
    Console.WriteLine($"sync caller got:   {other}");
}

var queue = host.Services.GetRequiredService<IWorkQueue<PaymentNotice>>();
var outcomes = host.Services.GetRequiredService<Outcomes>();
for (var id = 1; id <= Notices; id++)
{
    var notice = new PaymentNotice(id, OrderId: $"order-{id % 5}", Amount: 10m * id);
    if (!queue.TryEnqueue(notice))
    {
        Console.WriteLine($"notice {id} was rejected (and dead-lettered)");
    }
}

await outcomes.WaitForAsync(Notices).WaitAsync(TimeSpan.FromSeconds(60));
await host.StopAsync();

Console.WriteLine($"handled {outcomes.Handled}, dead letters {outcomes.DeadLetters} of {Notices} notices");
foreach (var statistics in host.Services.GetRequiredService<IBoundedExecutorRegistry>().GetStatistics())
{
    Console.WriteLine($"executor '{statistics.Name}': submitted {statistics.Submitted}, completed {statistics.Completed}, rejected {statistics.Rejected}, ThreadPool blocking waits {statistics.ThreadPoolBlockingWaits}");
}

return outcomes.Handled + outcomes.DeadLetters == Notices ? 0 : 1;
