// The reader's own types that the README snippets use: stand-ins for their blocking SDKs, outbox and domain.
// Compiled together with each snippet by ReadmeSnippetTests; nothing here is part of BoundedWork.
using BoundedWork;
using BoundedWork.Hosting;

public sealed record Customer(int Id);

public sealed record Order(int Id, Customer Customer);

public sealed class LegacyCrm
{
    public Customer GetCustomer(int id) => new(id);

    public void Audit(Order order) => GC.KeepAlive(order);
}

public sealed class Mailer
{
    public void SendReceipt(Order order) => GC.KeepAlive(order);
}

public sealed class Outbox
{
    public void Save(WorkItem item, RejectionReason reason) => GC.KeepAlive((item, reason));
}

public sealed record PaymentCallback(string OrderId, decimal Amount);

public sealed class LegacyPayments
{
    public void Process(PaymentCallback callback) => GC.KeepAlive(callback);
}

public sealed record OutboxMessage(string OrderId, decimal Amount)
{
    public static OutboxMessage For(PaymentCallback callback) => new(callback.OrderId, callback.Amount);
}

public sealed class OutboxDb
{
    public void Add(OutboxMessage message) => GC.KeepAlive(message);

    public Task SaveChangesAsync() => Task.CompletedTask;
}

public sealed record Receipt(string OrderId, string Email);

public sealed class LegacyMailer
{
    public void Send(Receipt receipt) => GC.KeepAlive(receipt);
}

public static class LegacyLedger
{
    public static decimal Balance(string account) => account.Length;

    public static void Touch(string account) => GC.KeepAlive(account);
}

public sealed record PaymentNotice(string OrderId, decimal Amount);

public sealed class LegacyGateway
{
    public void Notify(PaymentNotice notice) { }
}

public sealed record Product(int Id, string Name);

public interface IProductRepository
{
    Product Get(int id);

    void Save(Product product);
}

public sealed class SqlProductRepository : IProductRepository
{
    public Product Get(int id) => new(id, "product");

    public void Save(Product product) { }
}

public sealed class LegacyReports
{
    public void Recalculate() { }

    public void Export(Order order) { }
}

public interface ILegacyLedger
{
    void Record(PaymentNotice notice);
}

public interface IKeyedLedger
{
    bool HasRecorded(long itemId);

    void Record(PaymentNotice notice, long itemId);
}

public sealed class PaymentNoticeDeadLetters : IDeadLetterHandler<PaymentNotice>
{
    public ValueTask HandleAsync(DeadLetter<PaymentNotice> deadLetter, CancellationToken cancellationToken) => ValueTask.CompletedTask;
}

public sealed class LedgerHandler(ILegacyLedger ledger) : IBlockingWorkHandler<PaymentNotice>
{
    public void Handle(PaymentNotice item, CancellationToken cancellationToken) => ledger.Record(item);
}
