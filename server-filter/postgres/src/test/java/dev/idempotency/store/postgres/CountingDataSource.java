package dev.idempotency.store.postgres;

import javax.sql.DataSource;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;

/** A DataSource that counts the statements executed on its connections: one execute is one round trip. */
final class CountingDataSource {

    final AtomicInteger executes = new AtomicInteger();
    final DataSource dataSource;

    CountingDataSource(DataSource target) {
        this.dataSource = proxy(DataSource.class, target);
    }

    @SuppressWarnings("unchecked")
    private <T> T proxy(Class<T> type, T target) {
        InvocationHandler handler = (p, method, args) -> {
            if (method.getName().startsWith("execute") && target instanceof Statement) {
                executes.incrementAndGet();
            }
            Object result;
            try {
                result = method.invoke(target, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
            if (result instanceof Connection c && !method.getName().equals("unwrap")) {
                return proxy(Connection.class, c);
            }
            if (result instanceof java.sql.PreparedStatement ps && !method.getName().equals("unwrap")) {
                return proxy(java.sql.PreparedStatement.class, ps);
            }
            if (result instanceof Statement s && !method.getName().equals("unwrap")) {
                return proxy(Statement.class, s);
            }
            return result;
        };
        return (T) Proxy.newProxyInstance(CountingDataSource.class.getClassLoader(), new Class<?>[]{type}, handler);
    }
}
