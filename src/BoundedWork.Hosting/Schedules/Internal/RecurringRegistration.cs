namespace BoundedWork.Hosting.Internal;

/// <summary>A schedule defined in code with <c>AddRecurring</c>, validated when it was added.</summary>
internal sealed record RecurringRegistration(
    string Name, RecurringSchedule Schedule, string Executor, Func<IServiceProvider, Action<RecurringTickContext>> Handler, RecurringScheduleOptions Options);
